import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { until } from '../../../../test/support/until.js';
import type { InboxChange, InboxItem } from '../model.js';
import type { InboxFeed } from './inbox-feed.js';

/** A feed, and a peer: another coordinator's view of the same store (the feed itself in one process). */
export interface InboxFeedFixture {
  feed: InboxFeed;
  peer: InboxFeed;
  cleanup(): Promise<void>;
}

let seq = 0;
function item(over: Partial<InboxItem> = {}): InboxItem {
  const n = ++seq;
  const now = Date.now();
  return {
    id: `cf_${n}`,
    type: 'confirmation',
    session: 's1',
    round: `rnd_${n}`,
    run: 'r1',
    callId: `c${n}`,
    name: 'run_command',
    args: { command: 'ls' },
    createdAt: now,
    order: 0,
    deadline: now + 10_000,
    ...over,
  };
}

/** The rules every InboxFeed keeps, run against each implementation. */
export function describeInboxFeedContract(name: string, make: () => Promise<InboxFeedFixture>): void {
  describe(`InboxFeed contract: ${name}`, () => {
    let fx: InboxFeedFixture;
    beforeEach(async () => {
      fx = await make();
    });
    afterEach(async () => {
      await fx.cleanup();
    });

    it('delivers an asked item and its going to a watcher on another coordinator, in order', async () => {
      const heard: InboxChange[] = [];
      await fx.peer.watch((c) => heard.push(c));
      const asked = item();
      await fx.feed.announce({ kind: 'asked', session: 's1', item: asked });
      await fx.feed.announce({ kind: 'gone', session: 's1', id: asked.id });
      await until(() => heard.length === 2, { what: 'heard.length === 2' });
      expect(heard).toEqual([
        { kind: 'asked', session: 's1', item: asked },
        { kind: 'gone', session: 's1', id: asked.id },
      ]);
    });

    it('stops delivering to an unwatched listener', async () => {
      const heard: InboxChange[] = [];
      const unwatch = await fx.peer.watch((c) => heard.push(c));
      const kept: InboxChange[] = [];
      await fx.peer.watch((c) => kept.push(c));
      unwatch();
      await fx.feed.announce({ kind: 'gone', session: 's1', id: 'cf_x' });
      await until(() => kept.length === 1, { what: 'kept.length === 1' });
      expect(heard).toEqual([]);
    });

    it('lists a session with something asked until its latest deadline passes', async () => {
      const now = Date.now();
      await fx.feed.announce({ kind: 'asked', session: 'sa', item: item({ session: 'sa', deadline: now + 1_000 }) });
      await fx.feed.announce({ kind: 'asked', session: 'sa', item: item({ session: 'sa', deadline: now + 5_000 }) });
      await fx.feed.announce({ kind: 'asked', session: 'sa', item: item({ session: 'sa', deadline: now + 2_000 }) });
      await fx.feed.announce({ kind: 'asked', session: 'sb', item: item({ session: 'sb', deadline: now + 1_000 }) });
      expect((await fx.peer.sessions(now)).sort()).toEqual(['sa', 'sb']);
      expect(await fx.peer.sessions(now + 3_000)).toEqual(['sa']);
      expect(await fx.peer.sessions(now + 5_000)).toEqual([]);
    });
  });
}
