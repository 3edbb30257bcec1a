import type { CallResult } from '../../packages/shared/src/index.js';

// The per-call rules of DESIGN.md pass 2 and its failure semantics, checked over what the handlers
// of real worker processes wrote to one events file (appended with O_APPEND, so the lines are in
// the order the writes happened, across processes) and what each round answered (API.md: a run
// never has two serial calls in flight; in a round a serial call runs after everything before it
// and before anything after it). A call's tag is
// `<run>/<round>/<index>/<r|w>` (r: a read, concurrent; w: a side effect, serial). Lines:
//   start <pid> <tag> <ms>    end <pid> <tag> <ms>    aborted <pid> <tag>   (the handlers)
//   killed <pid>              cancel run:<run>        cancel round:<run>/<round>   (the test)

/** One round as submitted: its run, its number in the run, its calls' tags, and the answer. */
export interface CheckedRound {
  run: string;
  round: number;
  tags: string[];
  results: CallResult[];
}

interface Interval {
  pid: number;
  startAt: number;
  endAt?: number;
  /** Started after its run or round was cancelled (a read whose cancel was missed: its outcome is dropped). */
  discarded: boolean;
}

export interface RulesReport {
  violations: string[];
  /** Most calls of one run in flight at once. */
  maxInFlight: number;
  /** Reads run twice (first on a killed worker). */
  retriedReads: number;
  /** Side effects ended worker_lost. */
  lostWrites: number;
  /** Calls running on a worker when it was killed. */
  killedMidCall: number;
  cancelled: number;
}

const runOf = (tag: string) => tag.split('/')[0] ?? '';
const roundScopeOf = (tag: string) => tag.split('/').slice(0, 2).join('/');
const isWrite = (tag: string) => tag.endsWith('/w');

/** Walks the events in order: the run's limit and serial calls alone, and each call's intervals. */
function walk(lines: readonly string[], limit: number, report: RulesReport) {
  const intervals = new Map<string, Interval[]>();
  const cancelledAt = new Map<string, number>();
  const killed = new Map<number, number>();
  const inFlight = new Map<string, Map<string, Interval>>();
  const flightOf = (run: string): Map<string, Interval> => {
    const flight = inFlight.get(run) ?? new Map<string, Interval>();
    inFlight.set(run, flight);
    return flight;
  };
  const endIn = (flight: Map<string, Interval>, key: string, at: number) => {
    const i = flight.get(key);
    if (i && i.endAt === undefined) i.endAt = at;
    flight.delete(key);
  };
  lines.forEach((line, at) => {
    const [word, a, b] = line.split(' ');
    if (word === 'killed') {
      killed.set(Number(a), at);
      for (const flight of inFlight.values())
        for (const [key, i] of flight) {
          if (i.pid !== Number(a)) continue;
          endIn(flight, key, at);
          report.killedMidCall++;
        }
    } else if (word === 'cancel' && a) {
      // `run:<run>` or `round:<run>/<round>`: from here its calls are answered cancelled.
      const scope = a.slice(a.indexOf(':') + 1);
      const run = runOf(scope);
      cancelledAt.set(scope, at);
      const flight = flightOf(run);
      for (const key of [...flight.keys()]) if (scope === run || roundScopeOf(key) === scope) endIn(flight, key, at);
    } else if (word === 'start' && b) {
      const tag = b;
      const discarded = cancelledAt.has(runOf(tag)) || cancelledAt.has(roundScopeOf(tag));
      const interval: Interval = { pid: Number(a), startAt: at, discarded };
      intervals.set(tag, [...(intervals.get(tag) ?? []), interval]);
      if (discarded) return;
      const flight = flightOf(runOf(tag));
      // Alone: beside no call of its round, nor another serial call of its run (rounds of one run
      // sent at once share the run's serial lane; their concurrent calls may run beside it).
      const beside = [...flight.keys()].filter(
        (o) => roundScopeOf(o) === roundScopeOf(tag) || (isWrite(o) && isWrite(tag)),
      );
      if (isWrite(tag) && beside.length > 0)
        report.violations.push(`serial ${tag} started beside ${beside.join(', ')}`);
      const serial = beside.find(isWrite);
      if (serial && !isWrite(tag)) report.violations.push(`${tag} started beside serial ${serial}`);
      flight.set(tag, interval);
      report.maxInFlight = Math.max(report.maxInFlight, flight.size);
      if (flight.size > limit)
        report.violations.push(`${flight.size} calls of ${runOf(tag)} in flight: ${[...flight.keys()]}`);
    } else if ((word === 'end' || word === 'aborted') && b) {
      endIn(flightOf(runOf(b)), b, at);
      for (const i of intervals.get(b) ?? []) if (i.pid === Number(a) && i.endAt === undefined) i.endAt = at;
    }
  });
  return { intervals, cancelledAt, killed };
}

type Walked = ReturnType<typeof walk>;

/** One call's answer and runs against the failure semantics (retried once, never a finished one, worker_lost). */
function checkCall(tag: string, result: CallResult | undefined, walked: Walked, report: RulesReport): void {
  const runs = walked.intervals.get(tag) ?? [];
  const cancelled = walked.cancelledAt.has(runOf(tag)) || walked.cancelledAt.has(roundScopeOf(tag));
  const code = result?.status === 'error' ? result.error?.code : undefined;
  const outcome = result?.status === 'ok' ? 'ok' : (code ?? result?.status ?? 'missing');
  const say = (problem: string) => report.violations.push(`${tag} (${outcome}, ran ${runs.length}×): ${problem}`);
  const ranOnPid = (result?.output as { pid?: number } | undefined)?.pid;
  if (outcome === 'cancelled') {
    report.cancelled++;
    if (!cancelled) say('cancelled, but neither its run nor its round was');
    if (runs.length > 1) say('run again after a cancel');
    return;
  }
  if (isWrite(tag)) {
    if (runs.length > 1) say('a side effect run twice');
    const [only] = runs;
    const diedMidCall = only !== undefined && walked.killed.has(only.pid) && only.endAt === walked.killed.get(only.pid);
    if (outcome === 'worker_lost') {
      report.lostWrites++;
      if (walked.killed.size === 0) say('worker_lost without a worker killed');
    } else if (outcome !== 'ok') say('a side effect ended neither ok, cancelled nor worker_lost');
    if (diedMidCall && outcome !== 'worker_lost') say('its worker died mid-call, yet not worker_lost');
    return;
  }
  if (outcome !== 'ok') say('a read must end ok (retried once if its worker died) or cancelled');
  if (runs.length > 2) say('a read run more than twice');
  if (runs.length === 2) {
    report.retriedReads++;
    if (!walked.killed.has(runs[0]?.pid ?? -1)) say('run twice, though its first worker was not killed');
  }
  if (ranOnPid !== undefined && walked.killed.has(ranOnPid) && runs.length > 1)
    say(`finished on killed worker ${ranOnPid} (its outcome recorded), yet run again`);
  if (!cancelled && walked.killed.size === 0 && runs.length !== 1) say('run other than once without a fault');
}

/** In a round no one cancelled: everything before a serial call ended before it, everything after started after it. */
function checkOrder(round: CheckedRound, walked: Walked, report: RulesReport): void {
  const scope = `${round.run}/${round.round}`;
  if (walked.cancelledAt.has(round.run) || walked.cancelledAt.has(scope)) return;
  round.tags.forEach((tag, k) => {
    if (!isWrite(tag)) return;
    const [s] = walked.intervals.get(tag) ?? [];
    if (!s) return;
    round.tags.forEach((other, j) => {
      if (j === k) return;
      for (const i of walked.intervals.get(other) ?? []) {
        if (j < k && (i.endAt ?? Number.POSITIVE_INFINITY) > s.startAt)
          report.violations.push(`${other} (before serial ${tag}) had not ended when it started`);
        if (j > k && i.startAt < (s.endAt ?? Number.POSITIVE_INFINITY))
          report.violations.push(`${other} (after serial ${tag}) started before it ended`);
      }
    });
  });
}

/** Every rule over one scenario's events and answers; `violations` empty when all hold. */
export function checkCallRules(lines: readonly string[], rounds: readonly CheckedRound[], limit: number): RulesReport {
  const report: RulesReport = {
    violations: [],
    maxInFlight: 0,
    retriedReads: 0,
    lostWrites: 0,
    killedMidCall: 0,
    cancelled: 0,
  };
  const walked = walk(lines, limit, report);
  for (const round of rounds) {
    // Every call answered exactly once, in call order.
    const ids = round.results.map((r) => r.id);
    const expected = round.tags.map((_, i) => `c${i}`);
    if (JSON.stringify(ids) !== JSON.stringify(expected))
      report.violations.push(`${round.run}/${round.round} answered ${JSON.stringify(ids)}`);
    round.tags.forEach((tag, i) => {
      checkCall(tag, round.results[i], walked, report);
    });
    checkOrder(round, walked, report);
  }
  return report;
}
