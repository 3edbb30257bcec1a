import type { CallResult } from '@tool-dispatch/shared';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import type { DedupeEntry, Grant, GrantMatch, HistoryEntry, SessionState, StoredPlanned } from '../model.js';
import { MAX_GRANTS_PER_SESSION } from '../rules/grants.js';
import type { CommitItem, Store } from './store.js';

/**
 * The rules every Store keeps (STYLE.md: one shared suite, run against each implementation).
 * `makeStore` gives a fresh, empty store for each test.
 */
export function describeStoreContract(
  name: string,
  /** `roundRetentionMs`: TD_ROUND_RETENTION_MS of the store made (v1.3). */
  makeStore: (options?: { roundRetentionMs?: number }) => Promise<{ store: Store; cleanup(): Promise<void> }>,
): void {
  describe(`Store contract: ${name}`, () => {
    let store: Store;
    let cleanup: () => Promise<void>;

    beforeEach(async () => {
      ({ store, cleanup } = await makeStore());
    });
    afterEach(async () => {
      await cleanup();
    });

    describe('sessions', () => {
      it('returns null for a session never put', async () => {
        expect(await store.getSession('nope')).toBeNull();
      });

      it('returns a put session unchanged', async () => {
        const s = session('s1', {
          fetched: ['b', 'a'],
          autoApprove: ['edit_file'],
          clientTools: [{ name: 'ask_user', description: 'Ask', parameters: { type: 'object' } }],
        });
        await store.putSession(s);
        expect(await store.getSession('s1')).toEqual(s);
      });

      it('keeps autoApprove "all"', async () => {
        await store.putSession(session('s1', { autoApprove: 'all' }));
        expect((await store.getSession('s1'))?.autoApprove).toBe('all');
      });

      it('replaces the whole session on a second put', async () => {
        await store.putSession(session('s1', { fetched: ['a', 'b'], autoApprove: ['x'], provider: 'openai' }));
        const next = session('s1', { fetched: ['c'], autoApprove: [], provider: 'anthropic' });
        await store.putSession(next);
        expect(await store.getSession('s1')).toEqual(next);
      });

      it('adds fetched names in order and ignores names already fetched', async () => {
        await store.putSession(session('s1', { fetched: ['a'] }));
        await store.markFetched('s1', ['b', 'a', 'c']);
        await store.markFetched('s1', ['c', 'd']);
        expect((await store.getSession('s1'))?.fetched).toEqual(['a', 'b', 'c', 'd']);
      });

      it('does not create a session when marking fetched on an unknown one', async () => {
        await store.markFetched('ghost', ['a']);
        expect(await store.getSession('ghost')).toBeNull();
      });

      it('adds a tool to auto-approve once', async () => {
        await store.putSession(session('s1', { autoApprove: ['a'] }));
        await store.addAutoApprove('s1', 'b');
        await store.addAutoApprove('s1', 'b');
        expect((await store.getSession('s1'))?.autoApprove).toEqual(['a', 'b']);
      });

      it('leaves autoApprove "all" as it is when a tool is added', async () => {
        await store.putSession(session('s1', { autoApprove: 'all' }));
        await store.addAutoApprove('s1', 'b');
        expect((await store.getSession('s1'))?.autoApprove).toBe('all');
      });

      it('does not create a session when adding auto-approve on an unknown one', async () => {
        await store.addAutoApprove('ghost', 'a');
        expect(await store.getSession('ghost')).toBeNull();
      });
    });

    describe('dedupe map', () => {
      it('finds nothing for a key never put', async () => {
        expect(await store.findDedupe('s1', 'r1', 'k')).toBeNull();
      });

      it('finds a put entry with its output and paths', async () => {
        const e = dedupe('read_files|1', 'read_files', { paths: ['a.txt'], output: { files: [{ path: 'a.txt' }] } });
        await store.putDedupe('s1', 'r1', e);
        expect(await store.findDedupe('s1', 'r1', e.key)).toEqual(e);
      });

      it('scopes entries to their run and session', async () => {
        await store.putDedupe('s1', 'r1', dedupe('k', 'calculate'));
        expect(await store.findDedupe('s1', 'r2', 'k')).toBeNull();
        expect(await store.findDedupe('s2', 'r1', 'k')).toBeNull();
      });

      it('replaces an entry put again under the same key', async () => {
        await store.putDedupe('s1', 'r1', dedupe('k', 'calculate', { callId: 'c1' }));
        await store.putDedupe('s1', 'r1', dedupe('k', 'calculate', { callId: 'c2' }));
        expect((await store.findDedupe('s1', 'r1', 'k'))?.callId).toBe('c2');
      });

      it('drops every entry of a tool when no paths are given, and only that tool', async () => {
        await store.putDedupe('s1', 'r1', dedupe('f1', 'find_files'));
        await store.putDedupe('s1', 'r1', dedupe('f2', 'find_files'));
        await store.putDedupe('s1', 'r1', dedupe('r1', 'read_files', { paths: ['a.txt'] }));
        expect(await store.dropDedupe('s1', 'r1', { tool: 'find_files' })).toBe(2);
        expect(await store.findDedupe('s1', 'r1', 'f1')).toBeNull();
        expect(await store.findDedupe('s1', 'r1', 'f2')).toBeNull();
        expect(await store.findDedupe('s1', 'r1', 'r1')).not.toBeNull();
      });

      it('drops only the entries whose paths meet the given paths', async () => {
        await store.putDedupe('s1', 'r1', dedupe('ab', 'read_files', { paths: ['a.txt', 'b.txt'] }));
        await store.putDedupe('s1', 'r1', dedupe('c', 'read_files', { paths: ['c.txt'] }));
        await store.putDedupe('s1', 'r1', dedupe('none', 'read_files'));
        expect(await store.dropDedupe('s1', 'r1', { tool: 'read_files', paths: ['b.txt', 'z.txt'] })).toBe(1);
        expect(await store.findDedupe('s1', 'r1', 'ab')).toBeNull();
        expect(await store.findDedupe('s1', 'r1', 'c')).not.toBeNull();
        expect(await store.findDedupe('s1', 'r1', 'none')).not.toBeNull();
      });

      it('drops entries keyed the way calls are (<tool>|<hash>) the same way, with or without paths', async () => {
        await store.putDedupe('s1', 'r1', dedupe('find_files|h1', 'find_files'));
        await store.putDedupe('s1', 'r1', dedupe('find_files_x|h2', 'find_files_x'));
        await store.putDedupe('s1', 'r1', dedupe('read_files|h3', 'read_files', { paths: ['a.txt'] }));
        await store.putDedupe('s1', 'r1', dedupe('read_files|h4', 'read_files'));
        expect(await store.dropDedupe('s1', 'r1', { tool: 'read_files', paths: ['a.txt'] })).toBe(1);
        expect(await store.findDedupe('s1', 'r1', 'read_files|h3')).toBeNull();
        expect(await store.findDedupe('s1', 'r1', 'read_files|h4')).not.toBeNull();
        expect(await store.dropDedupe('s1', 'r1', { tool: 'find_files' })).toBe(1);
        expect(await store.findDedupe('s1', 'r1', 'find_files|h1')).toBeNull();
        expect(await store.findDedupe('s1', 'r1', 'find_files_x|h2')).not.toBeNull();
        expect(await store.dropDedupe('s1', 'r1', { tool: 'read_files' })).toBe(1);
        expect(await store.findDedupe('s1', 'r1', 'read_files|h4')).toBeNull();
      });

      it('drops nothing for an empty paths list', async () => {
        await store.putDedupe('s1', 'r1', dedupe('a', 'read_files', { paths: ['a.txt'] }));
        expect(await store.dropDedupe('s1', 'r1', { tool: 'read_files', paths: [] })).toBe(0);
        expect(await store.findDedupe('s1', 'r1', 'a')).not.toBeNull();
      });

      it('drops only within the run', async () => {
        await store.putDedupe('s1', 'r1', dedupe('a', 'find_files'));
        await store.putDedupe('s1', 'r2', dedupe('a', 'find_files'));
        expect(await store.dropDedupe('s1', 'r1', { tool: 'find_files' })).toBe(1);
        expect(await store.findDedupe('s1', 'r2', 'a')).not.toBeNull();
      });
    });

    describe('lookups of many keys', () => {
      it('finds the dedupe entries there are, by key, within the run', async () => {
        const a = dedupe('a', 'calculate');
        await store.putDedupe('s1', 'r1', a);
        await store.putDedupe('s1', 'r2', dedupe('b', 'calculate'));
        const found = await store.findDedupeMany('s1', 'r1', ['a', 'b', 'missing']);
        expect([...found.entries()]).toEqual([['a', a]]);
        expect((await store.findDedupeMany('s1', 'r1', [])).size).toBe(0);
      });

      it('finds the live cached results there are, by key, within the tenant', async () => {
        const value = { output: 1, callId: 'c1', round: 'rnd_1', storedAt: 1 };
        await store.putCached('t1', 'live', value, 60_000);
        await store.putCached('t1', 'stale', value, 80);
        await store.putCached('t2', 'other', value, 60_000);
        await sleep(250);
        const found = await store.findCachedMany('t1', ['live', 'stale', 'other']);
        expect([...found.entries()]).toEqual([['live', value]]);
        expect((await store.findCachedMany('t1', [])).size).toBe(0);
      });
    });

    describe('result cache', () => {
      const value = { output: { text: 'hi' }, callId: 'c1', round: 'rnd_1', storedAt: 1 };

      it('finds a cached result before it expires', async () => {
        await store.putCached('t1', 'fetch_page|x', value, 60_000);
        expect(await store.findCached('t1', 'fetch_page|x')).toEqual(value);
      });

      it('finds nothing once the TTL has passed', async () => {
        await store.putCached('t1', 'fetch_page|x', value, 80);
        await sleep(250);
        expect(await store.findCached('t1', 'fetch_page|x')).toBeNull();
      });

      it('never shares an entry between tenants', async () => {
        await store.putCached('t1', 'fetch_page|x', value, 60_000);
        expect(await store.findCached('t2', 'fetch_page|x')).toBeNull();
      });
    });

    describe('a round committed at once (commitRound)', () => {
      let seq = 0;
      /** Commits items as one round (a fresh one unless `round` names one). */
      const commit = (items: CommitItem[], o: { session?: string; run?: string; round?: string } = {}) => {
        const round = o.round ?? `rnd_c${++seq}`;
        return store.commitRound({
          session: o.session ?? 's1',
          tenant: 't1',
          run: o.run ?? 'r1',
          round,
          items,
        });
      };

      it('records a round once however often it is committed: a round done is fenced', async () => {
        await store.putSession(session('s1'));
        await store.beginRound({ session: 's1', run: 'r1', round: 'rnd_1', idempotencyKey: undefined, callsHash: '' });
        const d = dedupe('k', 'calculate');
        const e = entry('rnd_1', 'c1', 'calculate');
        expect(await commit([item(0, e, { dedupe: d })], { round: 'rnd_1' })).toEqual({ fenced: false });
        await store.dropDedupe('s1', 'r1', { tool: 'calculate' });
        expect(await commit([item(0, e, { dedupe: d })], { round: 'rnd_1' })).toEqual({ fenced: true });
        expect(await store.history('s1')).toEqual([e]);
        expect(await store.findDedupe('s1', 'r1', 'k')).toBeNull();
        expect(await store.getRound('s1', 'r1', 'rnd_1')).toMatchObject({
          state: 'done',
          response: { round: 'rnd_1', results: [result('c1', 'calculate')] },
        });
      });

      it('keeps its own copies: what the caller passed or was given can change without changing what is stored', async () => {
        await store.putSession(session('s1'));
        await store.beginRound({
          session: 's1',
          run: 'r1',
          round: 'rnd_iso',
          idempotencyKey: undefined,
          callsHash: '',
        });
        const e = entry('rnd_iso', 'c1', 'calculate', { output: { n: 1 } });
        const stored = structuredClone(e);
        const d = dedupe('iso', 'calculate');
        const value = { output: { n: 1 }, callId: 'c1', round: 'rnd_iso', storedAt: 1 };
        await commit([item(0, e, { dedupe: d, cache: { key: 'iso', value, ttlMs: 60_000 } })], { round: 'rnd_iso' });
        (e.output as { n: number }).n = 2;
        (d.output as Record<string, unknown>).changed = true;
        value.output.n = 3;
        const answered = await store.getRound('s1', 'r1', 'rnd_iso');
        ((answered?.response?.results[0]?.output ?? {}) as { n: number }).n = 4;
        const listed = await store.history('s1');
        (listed[0]?.output as { n: number }).n = 5;
        expect(await store.history('s1')).toEqual([stored]);
        expect((await store.getRound('s1', 'r1', 'rnd_iso'))?.response?.results[0]?.output).toEqual({ n: 1 });
        expect((await store.findDedupe('s1', 'r1', 'iso'))?.output).toEqual(dedupe('iso', 'calculate').output);
        expect((await store.findCached('t1', 'iso'))?.output).toEqual({ n: 1 });
      });

      it('returns history oldest first, and one tool on request', async () => {
        const a = entry('rnd_1', 'c1', 'read_files');
        const b = entry('rnd_1', 'c2', 'calculate', { status: 'error', error: { code: 'timeout', message: 't' } });
        const c = entry('rnd_2', 'c3', 'read_files', { status: 'deduped', dedupedFrom: 'c1' });
        await commit([item(0, a), item(1, b)]);
        await commit([item(0, c)]);
        expect(await store.history('s1')).toEqual([a, b, c]);
        expect(await store.history('s1', 'read_files')).toEqual([a, c]);
        expect(await store.history('s1', 'calculate')).toEqual([b]);
        expect(await store.history('s1', 'edit_file')).toEqual([]);
      });

      it('keeps histories apart per session', async () => {
        await commit([item(0, entry('rnd_1', 'c1', 'calculate'))]);
        expect(await store.history('s2')).toEqual([]);
        await commit([item(0, entry('rnd_1', 'c1', 'calculate'))], { session: 's2' });
        expect(await store.history('s2')).toHaveLength(1);
      });

      it('puts dedupe entries and caches results of the calls it records', async () => {
        const d = dedupe('fetch_page|x', 'fetch_page');
        const value = { output: { text: 'hi' }, callId: 'c1', round: 'rnd_1', storedAt: 1 };
        await commit([
          item(0, entry('rnd_1', 'c1', 'fetch_page'), { dedupe: d, cache: { key: d.key, value, ttlMs: 60_000 } }),
        ]);
        expect(await store.findDedupe('s1', 'r1', d.key)).toEqual(d);
        expect(await store.findDedupe('s1', 'r2', d.key)).toBeNull();
        expect(await store.findCached('t1', d.key)).toEqual(value);
        expect(await store.findCached('t2', d.key)).toBeNull();
      });

      it('applies the calls in order: a later call invalidates what an earlier one put', async () => {
        await store.putDedupe('s1', 'r1', dedupe('old', 'find_files'));
        const read = dedupe('read|a', 'read_files', { paths: ['a.txt'] });
        const other = dedupe('read|b', 'read_files', { paths: ['b.txt'] });
        const after = dedupe('read|a2', 'read_files', { paths: ['a.txt'], callId: 'c3' });
        await commit([
          item(0, entry('rnd_1', 'c1', 'read_files'), { dedupe: read }),
          item(1, entry('rnd_1', 'c0', 'read_files'), { dedupe: other }),
          item(2, entry('rnd_1', 'c2', 'edit_file'), {
            invalidations: [{ tool: 'read_files', paths: ['a.txt'] }, { tool: 'find_files' }],
          }),
          item(3, entry('rnd_1', 'c3', 'read_files'), { dedupe: after }),
        ]);
        expect(await store.findDedupe('s1', 'r1', 'read|a')).toBeNull();
        expect(await store.findDedupe('s1', 'r1', 'old')).toBeNull();
        expect(await store.findDedupe('s1', 'r1', 'read|b')).toEqual(other);
        expect(await store.findDedupe('s1', 'r1', 'read|a2')).toEqual(after);
      });

      it('keeps each result exactly: in the history, its tool history and the round answer', async () => {
        await store.putSession(session('s1'));
        await store.beginRound({ session: 's1', run: 'r1', round: 'rnd_9', idempotencyKey: undefined, callsHash: '' });
        const rich = entry('rnd_9', 'c1', 'read_files', {
          output: { text: 'quote " backslash \\ brace } comma , "at": 1 — ünïcode ✓', list: [1, { a: null }] },
          durationMs: 12,
          ranOn: 'w-1',
        });
        const failed = entry('rnd_9', 'c2', 'calculate', {
          status: 'error',
          output: undefined,
          error: { code: 'invalid', message: 'bad "args"', details: { problems: ['x'] } },
        });
        await commit([item(0, rich), item(1, failed)], { round: 'rnd_9' });
        expect(await store.history('s1')).toEqual([rich, failed]);
        expect(await store.history('s1', 'read_files')).toEqual([rich]);
        const { round: _r, run: _n, at: _a, ...richResult } = rich;
        const { round: _r2, run: _n2, at: _a2, ...failedResult } = failed;
        expect((await store.getRound('s1', 'r1', 'rnd_9'))?.response).toEqual({
          round: 'rnd_9',
          results: [richResult, failedResult],
        });
      });

      it('commits a round of no calls, recording only its answer', async () => {
        expect(await commit([])).toEqual({ fenced: false });
        expect(await store.history('s1')).toEqual([]);
      });
    });

    describe('grants (v1.2)', () => {
      const match = (over: Partial<GrantMatch> = {}): GrantMatch => ({
        tool: 'run_command',
        argsHash: 'h1',
        run: 'r1',
        now: Date.now(),
        ...over,
      });

      it('keeps a grant with its session and lists it', async () => {
        const g = grant('g1', { scope: 'args', argsHash: 'h1' });
        expect(await store.addGrant('s1', g)).toBe(true);
        expect(await store.listGrants('s1')).toEqual([g]);
        expect(await store.listGrants('s2')).toEqual([]);
      });

      it('uses an args grant only for the same args hash, counting each use', async () => {
        await store.addGrant('s1', grant('g1', { scope: 'args', argsHash: 'h1' }));
        expect(await store.useGrant('s1', match({ argsHash: 'h2' }))).toBeNull();
        expect(await store.useGrant('s1', match({ tool: 'edit_file' }))).toBeNull();
        expect((await store.useGrant('s1', match()))?.uses).toBe(1);
        expect((await store.useGrant('s1', match()))?.uses).toBe(2);
        expect((await store.listGrants('s1'))[0]?.uses).toBe(2);
      });

      it('uses a tool grant for any args; a run grant only in its run', async () => {
        await store.addGrant('s1', grant('g1', { scope: 'tool', run: 'r1' }));
        expect((await store.useGrant('s1', match({ argsHash: 'other' })))?.grantId).toBe('g1');
        expect(await store.useGrant('s1', match({ run: 'r2' }))).toBeNull();
      });

      it('prefers the narrowest grant: args before tool', async () => {
        await store.addGrant('s1', grant('gt', { scope: 'tool', createdAt: '2024-01-01T00:00:00.000Z' }));
        await store.addGrant(
          's1',
          grant('ga', { scope: 'args', argsHash: 'h1', createdAt: '2024-01-02T00:00:00.000Z' }),
        );
        expect((await store.useGrant('s1', match()))?.grantId).toBe('ga');
        expect((await store.useGrant('s1', match({ argsHash: 'h9' })))?.grantId).toBe('gt');
      });

      it('no longer uses or lists a grant past its expiry', async () => {
        const expiresAt = new Date(Date.now() + 150).toISOString();
        await store.addGrant('s1', grant('g1', { scope: 'tool', expiresAt }));
        expect((await store.useGrant('s1', match()))?.grantId).toBe('g1');
        await sleep(200);
        expect(await store.useGrant('s1', match())).toBeNull();
        expect(await store.listGrants('s1')).toEqual([]);
      });

      it('revokes a grant at once; revoking an unknown one is false', async () => {
        await store.addGrant('s1', grant('g1', { scope: 'tool' }));
        expect(await store.revokeGrant('s1', 'g1')).toBe(true);
        expect(await store.useGrant('s1', match())).toBeNull();
        expect(await store.revokeGrant('s1', 'g1')).toBe(false);
      });

      it(`keeps at most ${MAX_GRANTS_PER_SESSION} live grants per session`, async () => {
        for (let i = 0; i < MAX_GRANTS_PER_SESSION; i++) expect(await store.addGrant('s1', grant(`g${i}`))).toBe(true);
        expect(await store.addGrant('s1', grant('one-more'))).toBe(false);
        await store.revokeGrant('s1', 'g0');
        expect(await store.addGrant('s1', grant('one-more'))).toBe(true);
      });
    });

    describe('rounds', () => {
      const begin = (round: string, idempotencyKey: string | undefined, callsHash = 'h1', run = 'r1') =>
        store.beginRound({ session: 's1', run, round, idempotencyKey, callsHash });
      const s1 = session('s1', { fetched: ['find_tools', 'calculate'], autoApprove: ['edit_file'] });

      beforeEach(async () => {
        await store.putSession(s1);
      });

      it('starts a new running round without an idempotency key, with the session as it is', async () => {
        await store.markFetched('s1', ['read_files']);
        const res = await begin('rnd_1', undefined);
        expect(res.kind).toBe('new');
        if (res.kind !== 'new') return;
        expect(res.session).toEqual({ ...s1, fetched: ['find_tools', 'calculate', 'read_files'] });
        expect(res.record).toMatchObject({
          round: 'rnd_1',
          session: 's1',
          run: 'r1',
          callsHash: 'h1',
          state: 'running',
        });
        expect(await store.getRound('s1', 'r1', 'rnd_1')).toEqual(res.record);
      });

      it("reads the run's dedupe entries asked for with the begin", async () => {
        const d = dedupe('calculate|x', 'calculate');
        await store.putDedupe('s1', 'r1', d);
        const res = await store.beginRound({
          session: 's1',
          run: 'r1',
          round: 'rnd_1',
          idempotencyKey: undefined,
          callsHash: '',
          dedupeKeys: ['calculate|x', 'calculate|y'],
        });
        expect(res.kind === 'new' && [...res.dedupe]).toEqual([['calculate|x', d]]);
        const other = await store.beginRound({
          session: 's1',
          run: 'r2',
          round: 'rnd_2',
          idempotencyKey: undefined,
          callsHash: '',
          dedupeKeys: ['calculate|x'],
        });
        expect(other.kind === 'new' && other.dedupe.size).toBe(0);
      });

      it('begins nothing for a session that does not exist, and claims no key', async () => {
        const ghost = (round: string) =>
          store.beginRound({ session: 'ghost', run: 'r1', round, idempotencyKey: 'key-1', callsHash: 'h1' });
        expect(await ghost('rnd_1')).toEqual({ kind: 'no_session' });
        expect(await store.getRound('ghost', 'r1', 'rnd_1')).toBeNull();
        await store.putSession(session('ghost'));
        expect((await ghost('rnd_2')).kind).toBe('new');
      });

      it('returns the first round for a retry with the same key and calls', async () => {
        const first = await begin('rnd_1', 'key-1');
        const retry = await begin('rnd_2', 'key-1');
        if (first.kind !== 'new') throw new Error(`expected a new round, got ${first.kind}`);
        expect(retry).toEqual({ kind: 'existing', record: first.record });
        expect(await store.getRound('s1', 'r1', 'rnd_2')).toBeNull();
      });

      it('reports a conflict for the same key with different calls', async () => {
        await begin('rnd_1', 'key-1', 'h1');
        const other = await begin('rnd_2', 'key-1', 'h2');
        expect(other).toMatchObject({ kind: 'conflict', record: { round: 'rnd_1' } });
      });

      it('scopes idempotency keys to the run', async () => {
        await begin('rnd_1', 'key-1', 'h1', 'r1');
        expect((await begin('rnd_2', 'key-1', 'h1', 'r2')).kind).toBe('new');
      });

      it('stores the response when a round finishes, and a retry sees it', async () => {
        await begin('rnd_1', 'key-1');
        const response = { round: 'rnd_1', results: [result('c1', 'calculate')] };
        await store.commitRound({
          session: 's1',
          tenant: 't1',
          run: 'r1',
          round: 'rnd_1',
          items: [{ callIndex: 0, entry: entry('rnd_1', 'c1', 'calculate') }],
        });
        expect(await store.getRound('s1', 'r1', 'rnd_1')).toMatchObject({ state: 'done', response });
        const retry = await begin('rnd_9', 'key-1');
        expect(retry).toMatchObject({ kind: 'existing', record: { round: 'rnd_1', state: 'done', response } });
      });

      it('knows nothing of a round never begun, even after a commit under its id', async () => {
        expect(await store.getRound('s1', 'r1', 'rnd_x')).toBeNull();
        await store.commitRound({ session: 's1', tenant: 't1', run: 'r1', round: 'rnd_x', items: [] });
        expect(await store.getRound('s1', 'r1', 'rnd_x')).toBeNull();
      });
    });

    describe('a finished round kept for TD_ROUND_RETENTION_MS (v1.3)', () => {
      let short: { store: Store; cleanup(): Promise<void> };
      beforeEach(async () => {
        short = await makeStore({ roundRetentionMs: 300 });
        await short.store.putSession(session('s1'));
      });
      afterEach(async () => {
        await short.cleanup();
      });
      const begin = (round: string, idempotencyKey: string | undefined) =>
        short.store.beginRound({
          session: 's1',
          run: 'r1',
          round,
          idempotencyKey,
          callsHash: 'h1',
          callNames: [{ id: 'c1', name: 'calculate' }],
        });
      /** Reads the round until it is gone (a few retention periods at most). */
      async function gone(round: string): Promise<boolean> {
        for (let i = 0; i < 100; i++) {
          if ((await short.store.getRound('s1', 'r1', round)) === null) return true;
          await new Promise((r) => setTimeout(r, 50));
        }
        return false;
      }

      it('keeps the calls named at the begin in the record', async () => {
        await begin('rnd_1', undefined);
        expect((await short.store.getRound('s1', 'r1', 'rnd_1'))?.callNames).toEqual([{ id: 'c1', name: 'calculate' }]);
      });

      it('forgets a committed round and its key once the retention has passed; the key then begins a new round', async () => {
        await begin('rnd_1', 'key-1');
        await short.store.commitRound({
          session: 's1',
          tenant: 't1',
          run: 'r1',
          round: 'rnd_1',
          items: [{ callIndex: 0, entry: entry('rnd_1', 'c1', 'calculate') }],
        });
        expect((await short.store.getRound('s1', 'r1', 'rnd_1'))?.state).toBe('done');
        expect(await gone('rnd_1')).toBe(true);
        const again = await begin('rnd_2', 'key-1');
        expect(again.kind).toBe('new');
        expect((await begin('rnd_3', 'key-1')).kind).toBe('existing');
      });

      it('never forgets a running round by it, nor a failed one before it has passed', async () => {
        await short.store.beginRound({
          session: 's1',
          run: 'r1',
          round: 'rnd_run',
          idempotencyKey: undefined,
          callsHash: '',
          owner: 'co1',
          calls: [],
        });
        await short.store.beginRound({
          session: 's1',
          run: 'r1',
          round: 'rnd_f',
          idempotencyKey: undefined,
          callsHash: '',
          owner: 'co1',
          calls: [],
        });
        expect(await short.store.failRound('s1', 'r1', 'rnd_f', 'co1', 'given up')).toBe(true);
        expect((await short.store.getRound('s1', 'r1', 'rnd_f'))?.state).toBe('failed');
        expect(await gone('rnd_f')).toBe(true);
        expect((await short.store.getRound('s1', 'r1', 'rnd_run'))?.state).toBe('running');
      });
    });

    describe('rounds a coordinator owns (takeover and fencing)', () => {
      const calls = [{ id: 'c1', name: 'calculate', args: { expression: '1+1' } }];
      const own = (round: string, owner: string) =>
        store.beginRound({ session: 's1', run: 'r1', round, idempotencyKey: undefined, callsHash: '', owner, calls });
      const commitBy = (round: string, owner: string, id = 'c1') =>
        store.commitRound({
          session: 's1',
          tenant: 't1',
          run: 'r1',
          round,
          owner,
          items: [item(0, entry(round, id, 'calculate'))],
        });
      const planned: StoredPlanned[] = [
        {
          call: { index: 0, id: 'c1', name: 'calculate', args: { expression: '1+1' } },
          name: 'calculate',
          args: { expression: '1+1' },
          key: 'k',
          dedupable: true,
          cacheable: false,
          decision: { kind: 'run', needsConfirm: false },
        },
      ];

      beforeEach(async () => {
        await store.putSession(session('s1'));
      });

      it('hands a running round to a new owner with its calls, and names the coordinator that began it', async () => {
        await own('rnd_1', 'a');
        expect(await store.takeRound('s1', 'r1', 'rnd_1', 'b')).toEqual({ kind: 'taken', calls, origin: 'a' });
        // Taken again (b died too): the origin stays a, whose name holds the calls' outcomes.
        expect(await store.takeRound('s1', 'r1', 'rnd_1', 'c')).toEqual({ kind: 'taken', calls, origin: 'a' });
      });

      it('fences out the owner before: its commit and its decisions write nothing', async () => {
        await own('rnd_1', 'a');
        await store.takeRound('s1', 'r1', 'rnd_1', 'b');
        expect(await store.saveDecisions('s1', 'r1', 'rnd_1', 'a', planned)).toBe(false);
        expect(await commitBy('rnd_1', 'a')).toEqual({ fenced: true });
        expect(await store.history('s1')).toEqual([]);
        expect(await store.getRound('s1', 'r1', 'rnd_1')).toMatchObject({ state: 'running' });
        expect(await commitBy('rnd_1', 'b')).toEqual({ fenced: false });
        expect(await store.getRound('s1', 'r1', 'rnd_1')).toMatchObject({
          state: 'done',
          response: { round: 'rnd_1', results: [result('c1', 'calculate')] },
        });
      });

      it('keeps the decisions of its owner for the next one', async () => {
        await own('rnd_1', 'a');
        expect(await store.saveDecisions('s1', 'r1', 'rnd_1', 'a', planned)).toBe(true);
        expect(await store.takeRound('s1', 'r1', 'rnd_1', 'b')).toEqual({ kind: 'taken', calls, planned, origin: 'a' });
      });

      it('commits a round once: a second commit of a done round is fenced', async () => {
        await own('rnd_1', 'a');
        expect(await commitBy('rnd_1', 'a')).toEqual({ fenced: false });
        expect(await commitBy('rnd_1', 'a', 'c2')).toEqual({ fenced: true });
        expect((await store.history('s1')).map((e) => e.id)).toEqual(['c1']);
        expect(await store.takeRound('s1', 'r1', 'rnd_1', 'b')).toEqual({ kind: 'done' });
      });

      it('fails a round only for its owner while it runs; a failed round is never taken over nor committed', async () => {
        await own('rnd_1', 'a');
        expect(await store.failRound('s1', 'r1', 'rnd_1', 'b', 'not yours')).toBe(false);
        expect(await store.getRound('s1', 'r1', 'rnd_1')).toMatchObject({ state: 'running' });
        expect(await store.failRound('s1', 'r1', 'rnd_1', 'a', 'gave up after 6 tries')).toBe(true);
        expect(await store.getRound('s1', 'r1', 'rnd_1')).toMatchObject({
          state: 'failed',
          error: 'gave up after 6 tries',
        });
        expect(await store.takeRound('s1', 'r1', 'rnd_1', 'b')).toEqual({ kind: 'done' });
        expect(await commitBy('rnd_1', 'a')).toEqual({ fenced: true });
        expect(await store.history('s1')).toEqual([]);
        expect(await store.failRound('s1', 'r1', 'rnd_1', 'a', 'again')).toBe(false);
        // A round done is not failed after the fact.
        await own('rnd_2', 'a');
        await commitBy('rnd_2', 'a');
        expect(await store.failRound('s1', 'r1', 'rnd_2', 'a', 'late')).toBe(false);
        expect(await store.getRound('s1', 'r1', 'rnd_2')).toMatchObject({ state: 'done' });
      });

      it('has nothing to hand over for a round never begun, or begun without an owner', async () => {
        expect(await store.takeRound('s1', 'r1', 'rnd_x', 'b')).toEqual({ kind: 'missing' });
        await store.beginRound({ session: 's1', run: 'r1', round: 'rnd_2', idempotencyKey: undefined, callsHash: '' });
        expect(await store.takeRound('s1', 'r1', 'rnd_2', 'b')).toEqual({ kind: 'missing' });
      });

      it('commits without fencing when no owner is given, and records the answer', async () => {
        await store.beginRound({ session: 's1', run: 'r1', round: 'rnd_3', idempotencyKey: undefined, callsHash: '' });
        const response = { round: 'rnd_3', results: [result('c1', 'calculate')] };
        const out = await store.commitRound({
          session: 's1',
          tenant: 't1',
          run: 'r1',
          round: 'rnd_3',
          items: [item(0, entry('rnd_3', 'c1', 'calculate'))],
        });
        expect(out).toEqual({ fenced: false });
        expect(await store.getRound('s1', 'r1', 'rnd_3')).toMatchObject({ state: 'done', response });
      });
    });

    it('answers ping', async () => {
      expect(await store.ping()).toBe(true);
    });
  });
}

function session(id: string, over: Partial<SessionState> = {}): SessionState {
  return {
    id,
    provider: 'openai',
    tenant: 'default',
    autoApprove: [],
    clientTools: [],
    loaded: ['find_tools', 'run_tool'],
    fetched: [],
    workspace: `/tmp/ws/${id}`,
    createdAt: 1_700_000_000_000,
    updatedAt: 1_700_000_000_000,
    ...over,
  };
}

function grant(grantId: string, over: Partial<Grant> = {}): Grant {
  return {
    grantId,
    tool: 'run_command',
    scope: 'tool',
    createdBy: 'a-approver',
    createdAt: '2024-01-01T00:00:00.000Z',
    uses: 0,
    ...over,
  };
}

function dedupe(key: string, tool: string, over: Partial<DedupeEntry> = {}): DedupeEntry {
  return { key, tool, callId: 'c1', round: 'rnd_1', output: { ok: true }, ...over };
}

function result(id: string, name: string, over: Partial<CallResult> = {}): CallResult {
  return { id, name, status: 'ok', output: { value: 1 }, durationMs: 3, ...over };
}

function item(callIndex: number, e: HistoryEntry, over: Omit<CommitItem, 'callIndex' | 'entry'> = {}): CommitItem {
  return { callIndex, entry: e, ...over };
}

function entry(round: string, id: string, name: string, over: Partial<CallResult> = {}): HistoryEntry {
  return { ...result(id, name, over), round, run: 'r1', at: '2024-01-01T00:00:00.000Z' };
}

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));
