import { describe, expect, it } from 'vitest';
import type { PendingConfirmation } from '../confirm/confirm-hub.js';
import { MemoryConfirmHub } from '../confirm/memory.js';
import { MemoryInboxFeed } from '../inbox/memory.js';
import { MemoryInputHub } from '../inputs/memory.js';
import type { InboxChange, ParkedInput } from '../model.js';
import { announcingConfirmHub, announcingInputHub } from './inbox-signals.js';

const tick = () => new Promise((r) => setTimeout(r, 0));

async function heard(feed: MemoryInboxFeed): Promise<InboxChange[]> {
  const changes: InboxChange[] = [];
  await feed.watch((c) => changes.push(c));
  return changes;
}

const confirmation = (id: string): PendingConfirmation => ({
  confirmationId: id,
  session: 's1',
  round: 'rnd_1',
  run: 'r1',
  callId: `call-${id}`,
  name: 'run_command',
  args: { command: 'ls' },
  createdAt: 1_000,
});

const parked = (id: string): ParkedInput => ({
  inputId: id,
  kind: 'interactive',
  session: 's1',
  round: 'rnd_2',
  run: 'r1',
  callId: `call-${id}`,
  callIndex: 0,
  name: 'ask_user',
  args: { question: 'Which?', choices: ['a', 'b'] },
  createdAt: Date.now(),
  deadline: Date.now() + 60_000,
});

describe('announcingConfirmHub', () => {
  it('announces each confirmation asked, with its deadline, and its going once answered', async () => {
    const feed = new MemoryInboxFeed();
    const changes = await heard(feed);
    const hub = announcingConfirmHub(new MemoryConfirmHub(), feed, 5_000);
    const decided = hub.request([confirmation('cf_1')], { timeoutMs: 60_000, signal: new AbortController().signal });
    await tick();
    expect(changes).toEqual([
      {
        kind: 'asked',
        session: 's1',
        item: expect.objectContaining({ id: 'cf_1', type: 'confirmation', callId: 'call-cf_1', deadline: 6_000 }),
      },
    ]);
    await hub.answer('s1', 'cf_1', { approve: true, remember: false });
    await decided;
    await tick();
    expect(changes.slice(1)).toEqual([
      { kind: 'gone', session: 's1', id: 'cf_1' },
      { kind: 'gone', session: 's1', id: 'cf_1' },
    ]);
  });

  it('announces the going of a confirmation that timed out', async () => {
    const feed = new MemoryInboxFeed();
    const changes = await heard(feed);
    const hub = announcingConfirmHub(new MemoryConfirmHub(), feed, 10);
    await hub.request([confirmation('cf_2')], { timeoutMs: 10, signal: new AbortController().signal });
    await tick();
    expect(changes.map((c) => c.kind)).toEqual(['asked', 'gone']);
  });

  it('lists the session of a confirmation asked until its deadline', async () => {
    const feed = new MemoryInboxFeed();
    const hub = announcingConfirmHub(new MemoryConfirmHub(), feed, 5_000);
    void hub.request([confirmation('cf_3')], { timeoutMs: 60_000, signal: new AbortController().signal });
    await tick();
    expect(await feed.sessions(5_999)).toEqual(['s1']);
    expect(await feed.sessions(6_000)).toEqual([]);
  });
});

describe('announcingInputHub', () => {
  it('announces a call parked the first time only, and its going once answered', async () => {
    const feed = new MemoryInboxFeed();
    const changes = await heard(feed);
    const hub = announcingInputHub(new MemoryInputHub(), feed);
    const input = parked('in_1');
    await hub.park(input);
    await hub.park(input);
    expect(changes).toEqual([
      {
        kind: 'asked',
        session: 's1',
        item: expect.objectContaining({ id: 'in_1', type: 'input', kind: 'interactive' }),
      },
    ]);
    expect(await hub.answer('s1', 'in_1', { output: 'a' })).toBe('answered');
    expect(await hub.answer('s1', 'in_1', { output: 'a' })).toBe('not_found');
    expect(changes.slice(1)).toEqual([{ kind: 'gone', session: 's1', id: 'in_1' }]);
  });

  it('announces the going of calls settled (cancelled) and of a wait that ended, not of one released', async () => {
    const feed = new MemoryInboxFeed();
    const changes = await heard(feed);
    const hub = announcingInputHub(new MemoryInputHub(), feed);
    await hub.park(parked('in_2'));
    await hub.settle('s1', ['in_2'], { by: 'cancelled' });
    const input = parked('in_3');
    await hub.park(input);
    const release = new AbortController();
    const waiting = hub.wait(input, { signal: new AbortController().signal, release: release.signal });
    release.abort();
    expect(await waiting).toEqual({ by: 'released' });
    const gone = changes.filter((c) => c.kind === 'gone').map((c) => (c.kind === 'gone' ? c.id : ''));
    expect(gone).toEqual(['in_2']);
  });
});
