import { describeInputHubContract } from './input-hub.contract.js';
import { MemoryInputHub } from './memory.js';

describeInputHubContract('MemoryInputHub', async () => {
  const hub = new MemoryInputHub();
  return { hub, peer: hub, cleanup: () => hub.close() };
});
