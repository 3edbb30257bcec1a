// A Redis Cluster primary restarted with its data (AOF) in the middle of a run (issue 14's
// failover-free fault): a coordinator and two workers on a real 3-primary cluster go on answering
// the run's rounds after it, every call once and ok, the run's dedupe and history intact. (A round
// sent while the primary is away is not answered today: see issue 14's note.)
import { expect, it } from 'vitest';
import { direct, uid } from '../conformance/api.js';
import { sleep } from '../conformance/service.js';
import { useClusterService } from './cluster-service.js';

const cs = useClusterService();

/** One round of 5 calculations, retried under its Idempotency-Key until it answers 200 (at most `ms`). */
async function roundUntilAnswered(session: string, run: string, n: number, ms: number) {
  const key = `k-${run}-${n}`;
  const calls = [1, 2, 3, 4, 5].map((i) => direct('calculate', { expression: `${n}*${i}` }, `c${n}-${i}`));
  let retries = 0;
  for (const end = Date.now() + ms; ; retries++) {
    const r = await cs.api
      .postRound(session, run, calls, { headers: { 'idempotency-key': key } })
      .catch((e: Error) => ({ status: 0, text: e.message, json: undefined }));
    if (r.status === 200)
      return {
        answer: r.json as { round: string; results: Array<{ status: string; output?: { value: number } }> },
        retries,
      };
    if (Date.now() > end) throw new Error(`round ${n} not answered within ${ms} ms; last ${r.status} ${r.text}`);
    await sleep(200);
  }
}

it('answers the rounds after a primary restarted with its AOF, each call once and ok', async () => {
  const session = uid('s');
  await cs.api.putSession(session, { provider: 'claude-code' });
  await cs.api.fetchSchemas(session, ['calculate']);
  const run = uid('run');
  const answered: Array<{ round: string; retries: number; values: number[] }> = [];
  let restarting: Promise<void> | undefined;
  const load = (async () => {
    for (let n = 1; n <= 40; n++) {
      const { answer, retries } = await roundUntilAnswered(session, run, n, 60_000);
      answered.push({ round: answer.round, retries, values: answer.results.map((r) => r.output?.value ?? Number.NaN) });
      for (const r of answer.results) expect(r.status, JSON.stringify(answer)).toBe('ok');
      // Between rounds: a round sent while the primary is away hangs today (issue 14's note; not
      // fixed yet), so this proves what holds: the rounds after the restart are answered.
      if (n === 10) {
        restarting = cs.cluster.restart(0);
        await restarting;
      }
    }
  })();
  await load;
  await restarting;
  const retried = answered.filter((a) => a.retries > 0);
  console.log(
    `[cluster-restart] 40 rounds answered, ${retried.length} after retries (${retried.reduce((t, a) => t + a.retries, 0)} retries in all)`,
  );
  expect(restarting).toBeDefined();
  expect(answered).toHaveLength(40);
  for (const [i, a] of answered.entries()) expect(a.values).toEqual([1, 2, 3, 4, 5].map((k) => (i + 1) * k));
  // One round per Idempotency-Key, however many retries: no round recorded twice.
  expect(new Set(answered.map((a) => a.round)).size).toBe(40);
  const history = await cs.api.history(session, 'calculate');
  expect(history.filter((h) => h.run === run)).toHaveLength(40 * 5);
  // And the service is ready again.
  expect((await cs.api.request('GET', '/readyz')).status).toBe(200);
}, 180_000);
