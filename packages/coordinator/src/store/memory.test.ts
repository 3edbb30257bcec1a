import { MemoryStore } from './memory.js';
import { describeStoreContract } from './store.contract.js';

describeStoreContract('MemoryStore', async () => ({ store: new MemoryStore(), cleanup: async () => {} }));
