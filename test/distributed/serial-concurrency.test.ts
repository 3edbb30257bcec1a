import { spawn } from 'node:child_process';
import { describe, expect, it } from 'vitest';
import { type Call, type Result, rt, uid } from '../conformance/api.js';
import { useService } from '../conformance/fixture.js';
import { REPO_ROOT } from '../conformance/service.js';

// DESIGN.md queues: the coordinator enforces a run's limits (one serial call at a time, in
// order), so a worker runs serial jobs of different runs side by side, up to
// TD_WORKER_SERIAL_CONCURRENCY (API.md v1.1, default 8). Real processes: a coordinator and two
// worker processes from bin/tool-dispatch on a Redis of the test's own.

const TEST_TIMEOUT_MS = 120_000;

/** A command printing when it started and ended (epoch ns, one clock: every process runs on this host). */
const timed = (seconds: number): { command: string } => ({
  command: `s=$(date +%s%N); sleep ${seconds}; e=$(date +%s%N); printf '%s %s' "$s" "$e"`,
});

interface Span {
  start: bigint;
  end: bigint;
  ranOn: string;
}

function spanOf(r: Result | undefined): Span {
  const [start, end] = String(r?.output?.stdout ?? '').split(' ');
  if (r?.status !== 'ok' || !start || !end) throw new Error(`no timestamps in ${JSON.stringify(r)}`);
  return { start: BigInt(start), end: BigInt(end), ranOn: String(r.ranOn) };
}

/** The most spans running at one instant. */
function mostAtOnce(spans: readonly Span[]): number {
  const edges = spans.flatMap((s) => [
    { t: s.start, d: 1 },
    { t: s.end, d: -1 },
  ]);
  // An end and a start at the same instant do not overlap: ends first.
  edges.sort((a, b) => (a.t < b.t ? -1 : a.t > b.t ? 1 : a.d - b.d));
  let now = 0;
  let most = 0;
  for (const e of edges) {
    now += e.d;
    most = Math.max(most, now);
  }
  return most;
}

/** Spans in ms after the first start, for messages. */
const show = (spans: readonly Span[]) => {
  let t0 = spans[0]?.start ?? 0n;
  for (const s of spans) if (s.start < t0) t0 = s.start;
  return spans.map((s) => `${s.ranOn} ${Number(s.start - t0) / 1e6}–${Number(s.end - t0) / 1e6} ms`).join(', ');
};

describe('with the default TD_WORKER_SERIAL_CONCURRENCY on two worker processes', () => {
  const f = useService('distributed', { workers: 2 });
  const session = () => f.api.session(['run_command'], { provider: 'openai', autoApprove: 'all' });

  it(
    'finishes 24 sessions each running one round of `sleep 1` in two commands’ time, up to 8 at once per worker',
    async () => {
      const sessions = await Promise.all(Array.from({ length: 24 }, () => session()));
      const t0 = performance.now();
      const answers = await Promise.all(sessions.map((s) => f.api.one(s, rt('run_command', timed(1)))));
      const elapsedMs = Math.round(performance.now() - t0);
      const spans = answers.map(spanOf);
      console.log(
        `24 sessions × run_command sleep 1 on 2 workers: ${elapsedMs} ms; at most ${mostAtOnce(spans)} commands at once`,
      );
      // One serial job at a time per worker took 12.9 s (two at a time). 2 workers × 8 run 16 at
      // once: the counts below show it (more than 8 commands at once, at most 8 per worker), not the
      // elapsed time, which a loaded 2-core machine stretches (it is logged above).
      expect(new Set(spans.map((s) => s.ranOn)).size).toBe(2);
      expect(mostAtOnce(spans)).toBeGreaterThan(8);
      for (const worker of new Set(spans.map((x) => x.ranOn))) {
        expect(mostAtOnce(spans.filter((x) => x.ranOn === worker)), `worker ${worker}`).toBeLessThanOrEqual(8);
      }
    },
    TEST_TIMEOUT_MS,
  );

  it(
    'never runs two serial calls of one run at once, even for rounds of the run submitted together, and keeps each round’s call order',
    async () => {
      const s = await session();
      const run = uid('run');
      const rounds: Call[][] = Array.from({ length: 4 }, () =>
        Array.from({ length: 4 }, () => rt('run_command', timed(0.15))),
      );
      const answers = await Promise.all(rounds.map((calls) => f.api.round(s, run, calls)));
      const perRound = answers.map((a) => a.results.map(spanOf));
      const all = perRound.flat().sort((a, b) => (a.start < b.start ? -1 : 1));
      for (let i = 1; i < all.length; i++) {
        const [prev, next] = [all[i - 1] as Span, all[i] as Span];
        expect(next.start >= prev.end, `two serial calls of the run overlapped: ${show(all)}`).toBe(true);
      }
      for (const spans of perRound) {
        for (let i = 1; i < spans.length; i++) {
          expect((spans[i] as Span).start >= (spans[i - 1] as Span).end, 'a round ran out of call order').toBe(true);
        }
      }
      // Both workers took part: the run was kept to one call at a time by the coordinator, not by a worker.
      expect(new Set(all.map((x) => x.ranOn)).size).toBe(2);
    },
    TEST_TIMEOUT_MS,
  );
});

describe('with TD_WORKER_SERIAL_CONCURRENCY=1 on two worker processes', () => {
  const f = useService('distributed', { workers: 2, env: { TD_WORKER_SERIAL_CONCURRENCY: '1' } });

  it(
    'runs one serial job at a time on each worker, as before v1.1',
    async () => {
      const sessions = await Promise.all(
        Array.from({ length: 6 }, () => f.api.session(['run_command'], { provider: 'openai', autoApprove: 'all' })),
      );
      const t0 = performance.now();
      const answers = await Promise.all(sessions.map((s) => f.api.one(s, rt('run_command', timed(0.5)))));
      const elapsedMs = Math.round(performance.now() - t0);
      const spans = answers.map(spanOf);
      console.log(`6 sessions × run_command sleep 0.5 on 2 workers, serial concurrency 1: ${elapsedMs} ms`);
      for (const worker of new Set(spans.map((x) => x.ranOn))) {
        expect(mostAtOnce(spans.filter((x) => x.ranOn === worker)), `worker ${worker}`).toBe(1);
      }
      expect(mostAtOnce(spans)).toBeLessThanOrEqual(2);
      // Six half-second commands two at a time.
      expect(elapsedMs).toBeGreaterThanOrEqual(1_400);
    },
    TEST_TIMEOUT_MS,
  );
});

describe('a TD_WORKER_SERIAL_CONCURRENCY that is not a positive integer', () => {
  it.each(['0', '-3', '2.5', 'eight'])(
    'stops the worker (%s) with a message naming the variable',
    async (value) => {
      const child = spawn(`${REPO_ROOT}/bin/tool-dispatch`, ['worker', '--port', '0'], {
        cwd: REPO_ROOT,
        // Loopback port 9 (discard): the value is refused before any connection is tried.
        env: { ...process.env, REDIS_URL: 'redis://127.0.0.1:9', TD_WORKER_SERIAL_CONCURRENCY: value },
        stdio: ['ignore', 'pipe', 'pipe'],
      });
      let stderr = '';
      child.stderr.on('data', (d: Buffer) => {
        stderr += d.toString();
      });
      const timer = setTimeout(() => child.kill('SIGKILL'), 30_000);
      const code = await new Promise<number | null>((resolve) => child.once('exit', resolve));
      clearTimeout(timer);
      expect(code).not.toBe(0);
      expect(code).not.toBe(null);
      expect(stderr).toContain('TD_WORKER_SERIAL_CONCURRENCY');
      expect(stderr).toContain(JSON.stringify(value));
    },
    TEST_TIMEOUT_MS,
  );
});
