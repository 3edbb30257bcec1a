/**
 * `@tool-dispatch/shared/redis`: what the coordinator and workers agree on about Redis and
 * BullMQ: key layout, queue names, job ids and payloads, marks and TTLs, Lua script helpers,
 * write coalescing. Not part of the wire API; the root door holds that.
 */

export { checkDeployment } from './deployment.js';
export type { RedisKeys } from './keys.js';
export { redisKeys, SESSION_TTL_MS } from './keys.js';
export type { LuaScript, ScriptClient } from './lua-script.js';
export { defineScript, runScript } from './lua-script.js';
export type { OutcomeReader, OutcomeSlot } from './outcome-slots.js';
export { groupSlots, outcomeSlot, RECORD_FIRST_LUA, readOutcomes } from './outcome-slots.js';
export { DuePerKey } from './periodic.js';
export type {
  AnswerMessage,
  AskMessage,
  CancelMessage,
  DeploymentRecord,
  QueuedJob,
  QueuedJobData,
  WorkerAnnouncement,
} from './queues.js';
export {
  batchJobIdFor,
  CANCEL_TTL_MS,
  callIdFor,
  encodeQueuedJob,
  FINISHED_JOB_RETENTION_S,
  failedJobVerdict,
  JOB_LOCK_MS,
  MAX_STALLED,
  MAX_STARTS,
  MAX_STARTS_REASON,
  OUTCOME_AFTER_COMMIT_TTL_MS,
  OUTCOME_TTL_MS,
  PLACE_LEASE_MS,
  parseAskMessage,
  parseInputReply,
  parseOutcome,
  parseQueuedJob,
  QUEUE_NAMES,
  RESULTS_STREAM_TTL_MS,
  RUNNING_MARK,
  STALLED_INTERVAL_MS,
  STALLED_REASON,
  shardOf,
  shardQueueName,
  shardQueueNames,
  tryParseJson,
  WORKER_HEARTBEAT_MS,
  WORKER_TTL_MS,
  workerLostOutcome,
} from './queues.js';
export type { ConnectOptions, RedisClient, RedisTarget } from './redis-connect.js';
export {
  commandTimeoutOf,
  connectRedis,
  duplicateClient,
  parseClusterNodes,
  redisTargetOf,
} from './redis-connect.js';
export type { RedisConnectionOptions, RedisConnectionSettings } from './redis-connection.js';
export { redisConnectionOptions } from './redis-connection.js';
export { isNotDurable, isRedisRefusal, NotDurableError, ReplicaAcks } from './redis-durability.js';
export { REDIS_START_WAIT_MS, startWhenRedisAnswers } from './redis-start.js';
export { coalesceWrites } from './redis-writes.js';
export type { EncodedOutcome, ResultsMessage } from './results-stream.js';
export { askFields, outcomeFields, parseResultsEntry, RESULTS_FIELD, RESULTS_STREAM_MAXLEN } from './results-stream.js';
