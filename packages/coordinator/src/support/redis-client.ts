export {
  defineScript,
  duplicateClient,
  type LuaScript,
  type RedisClient,
  runScript,
} from '@tool-dispatch/shared/redis';
