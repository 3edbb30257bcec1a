import { describeInboxFeedContract } from './inbox-feed.contract.js';
import { MemoryInboxFeed } from './memory.js';

describeInboxFeedContract('MemoryInboxFeed', async () => {
  const feed = new MemoryInboxFeed();
  return { feed, peer: feed, cleanup: () => feed.close() };
});
