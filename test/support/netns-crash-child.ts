import { Partitions } from './netns.js';

// A run that crashes: makes a namespace and Redis, says so, then waits to be SIGKILLed (no cleanup).
const p = await Partitions.create(1);
const ns = p.namespaces[0];
process.stdout.write(`made ${ns?.name} ${ns?.hostIf} ${p.redisPort}\n`);
setInterval(() => {}, 1_000);
