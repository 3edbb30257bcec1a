import { mkdtemp, readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { type Namespace, type NsProc, Partitions } from './netns.js';
import { randomPrefix } from './redis.js';

// The load of the partition tests (issue #43): sessions whose one run sends rounds of one slow
// serial run_command each, one after another. The command appends start, tick and end marks naming
// its call and the round's token to the session's marks.txt; a round is sent under its
// Idempotency-Key, and sent again on the other coordinator after a failure, a 5xx, a 202 or a
// timeout, until one answers 200. The checks read the marks: no two commands of a run overlap, no
// token starts twice, every answered result is in the history, and every key has one answer on
// every coordinator.

export const LONG = process.env.TD_LONG === '1';
/**
 * Ticks of a command (each 250 ms): about 16 s of command in the long form, 10 s in the short one,
 * longer than a job lock plus a stalled check (5 + 5 s) in the long form, so a cut-off worker left
 * alone would still run it when its job fails as stalled; in the short form a command the cut
 * catches early (the cut comes just after each session's previous command ended) still does.
 */
const TICKS = LONG ? 64 : 40;
/** How long a client waits for one answer before it sends again (on the other coordinator): below a command's length, so most rounds are also sent again under their key while they run. */
const CLIENT_TIMEOUT_MS = LONG ? 12_000 : 7_000;

export interface Cluster {
  net: Partitions;
  coordinators: NsProc[];
  workers: NsProc[];
  workspaces: string;
  close(): Promise<void>;
}

/** Two coordinators and two workers, each in a namespace of its own, on one Redis on the host. */
export async function startCluster(env: Record<string, string> = {}): Promise<Cluster> {
  const net = await Partitions.create(4);
  const workspaces = await mkdtemp(path.join(tmpdir(), 'td-partition-'));
  const base = { TD_PREFIX: randomPrefix('part'), TD_WORKSPACE_ROOT: workspaces, ...env };
  const [c1, c2, w1, w2] = net.namespaces as [Namespace, Namespace, Namespace, Namespace];
  try {
    const workers = await Promise.all([
      net.start(w1, ['worker'], base, /consuming/),
      net.start(w2, ['worker'], base, /consuming/),
    ]);
    const coordinators = await Promise.all([net.startCoordinator(c1, base), net.startCoordinator(c2, base)]);
    return {
      net,
      coordinators,
      workers,
      workspaces,
      close: async () => {
        if (process.env.TD_LOAD_LOGS === '1')
          for (const p of [...coordinators, ...workers]) console.log(p.ns.name, p.output.join('').slice(-20_000));
        await net.close();
        await rm(workspaces, { recursive: true, force: true });
      },
    };
  } catch (e) {
    await net.close();
    await rm(workspaces, { recursive: true, force: true });
    throw e;
  }
}

export interface Answer {
  round: string;
  // biome-ignore lint/suspicious/noExplicitAny: the wire's results, checked by the tests
  results: any[];
}

export interface RoundRecord {
  session: string;
  key: string;
  token: string;
  callId: string;
  sentAt: number;
  answeredAt?: number;
  answer?: Answer;
  /** The command's result: `ok`, or `error/<code>`. */
  command?: string;
  attempts: number;
  /** The coordinator sent to first (index in Cluster.coordinators): the one that begins the round. */
  first: number;
}

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

async function request(url: string, method: string, body?: unknown, key?: string) {
  const res = await fetch(url, {
    method,
    headers: { 'content-type': 'application/json', ...(key ? { 'idempotency-key': key } : {}) },
    ...(body === undefined ? {} : { body: JSON.stringify(body) }),
    signal: AbortSignal.timeout(CLIENT_TIMEOUT_MS),
  });
  // biome-ignore lint/suspicious/noExplicitAny: checked by the caller
  return { status: res.status, json: (await res.json().catch(() => null)) as any };
}

/** Sends until a coordinator answers 200, starting at `first` and going round the others after each failure. */
async function untilAnswered(
  cluster: Cluster,
  first: number,
  p: string,
  body: unknown,
  key?: string,
  method = 'POST',
): Promise<{ json: Answer; attempts: number }> {
  const end = Date.now() + 600_000;
  for (let attempt = 0; Date.now() < end; attempt++) {
    const c = cluster.coordinators[(first + attempt) % cluster.coordinators.length] as NsProc;
    try {
      const r = await request(`${c.url}${p}`, method, body, key);
      if (r.status === 200) return { json: r.json, attempts: attempt + 1 };
      if (r.status < 500 && r.status !== 202 && r.status !== 404)
        throw new Error(`${p}: ${r.status} ${JSON.stringify(r.json)}`);
    } catch (e) {
      if (e instanceof Error && e.message.startsWith('/v1')) throw e;
    }
    await sleep(Math.min(1_000, 100 * (attempt + 1)));
  }
  throw new Error(`${p} (${key}) not answered within 10 minutes`);
}

export function commandOf(callId: string, token: string): string {
  const mark = (what: string) => `echo "${what} ${callId} ${token}" >> marks.txt`;
  return `${mark('start')}; i=0; while [ $i -lt ${TICKS} ]; do ${mark('tick')}; sleep 0.25; i=$((i+1)); done; ${mark('end')}; echo ${token}`;
}

export interface Load {
  records: RoundRecord[];
  sessions: string[];
  /** Resolves once every session answered `n` more rounds sent after this call. */
  roundsAfter(n: number): Promise<void>;
  stop(): Promise<void>;
}

/** Starts `count` sessions' loops; each sends its rounds alternately first to one coordinator and the other. */
export async function startLoad(cluster: Cluster, count: number, label: string): Promise<Load> {
  const records: RoundRecord[] = [];
  const sessions = Array.from({ length: count }, (_, i) => `${label}-${i}-${Date.now().toString(36)}`);
  let stopping = false;
  await Promise.all(
    sessions.map(async (session, i) => {
      await untilAnswered(
        cluster,
        i,
        `/v1/sessions/${session}`,
        { provider: 'claude-code', autoApprove: 'all' },
        undefined,
        'PUT',
      );
      // claude-code: a tool's first call answers its schema.
      const calls = [{ id: 'schema', name: 'run_command', args: { command: 'true' } }];
      await untilAnswered(cluster, i, `/v1/sessions/${session}/runs/r/rounds`, { calls }, `${session}-schema`);
    }),
  );
  const loops = sessions.map(async (session, i) => {
    for (let k = 1; !stopping; k++) {
      const token = `tok-${session}-${k}`;
      const callId = `cmd-${k}`;
      const first = (i + k) % cluster.coordinators.length;
      const record: RoundRecord = {
        session,
        key: `${session}-k${k}`,
        token,
        callId,
        sentAt: Date.now(),
        attempts: 0,
        first,
      };
      records.push(record);
      const calls = [{ id: callId, name: 'run_command', args: { command: commandOf(callId, token) } }];
      const { json, attempts } = await untilAnswered(
        cluster,
        first,
        `/v1/sessions/${session}/runs/r/rounds`,
        { calls },
        record.key,
      );
      record.answeredAt = Date.now();
      record.answer = json;
      record.attempts = attempts;
      const r = json.results?.[0];
      record.command = r ? (r.error ? `${r.status}/${r.error.code}` : r.status) : 'absent';
    }
  });
  const all = Promise.all(loops);
  return {
    records,
    sessions,
    roundsAfter: async (n) => {
      const from = Date.now();
      for (;;) {
        const enough = sessions.every(
          (s) => records.filter((r) => r.session === s && r.sentAt >= from && r.answeredAt).length >= n,
        );
        if (enough) return;
        await sleep(200);
      }
    },
    stop: async () => {
      stopping = true;
      await all;
    },
  };
}

export interface Figures {
  rounds: number;
  answered: number;
  byOutcome: Record<string, number>;
  overlaps: string[];
  tokens: { zero: number; one: number; many: string[] };
  /** Commands that started and never wrote their end mark (stopped part way: fenced, or killed). */
  unended: number;
  /** Answered ok yet its command never started or never ended (a result with no side effect behind it). */
  okWithoutRun: string[];
  missingFromHistory: string[];
  answersDiffering: string[];
}

/** One session's marks: per token, the first and last line it wrote, and how many times it started. */
export async function marksOf(cluster: Cluster, session: string) {
  const text = await readFile(path.join(cluster.workspaces, 'default', session, 'marks.txt'), 'utf8').catch(() => '');
  const spans = new Map<string, { first: number; last: number; starts: number; ended: boolean }>();
  text
    .split('\n')
    .filter(Boolean)
    .forEach((line, i) => {
      const [what, , token] = line.split(' ');
      if (!token) return;
      const span = spans.get(token) ?? { first: i, last: i, starts: 0, ended: false };
      span.last = i;
      if (what === 'start') span.starts++;
      if (what === 'end') span.ended = true;
      spans.set(token, span);
    });
  return spans;
}

/** The checks of every partition test, as figures (the test asserts them). */
export async function check(cluster: Cluster, load: Load): Promise<Figures> {
  const figures: Figures = {
    rounds: load.records.length,
    answered: load.records.filter((r) => r.answer).length,
    byOutcome: {},
    overlaps: [],
    tokens: { zero: 0, one: 0, many: [] },
    unended: 0,
    okWithoutRun: [],
    missingFromHistory: [],
    answersDiffering: [],
  };
  for (const r of load.records)
    figures.byOutcome[r.command ?? 'unanswered'] = (figures.byOutcome[r.command ?? 'unanswered'] ?? 0) + 1;
  for (const session of load.sessions) {
    const spans = await marksOf(cluster, session);
    const ordered = [...spans.entries()].sort((a, b) => a[1].first - b[1].first);
    for (let i = 1; i < ordered.length; i++) {
      const [prevToken, prev] = ordered[i - 1] as [string, { last: number }];
      const [token, span] = ordered[i] as [string, { first: number }];
      if (span.first < prev.last) figures.overlaps.push(`${prevToken} still wrote after ${token} started`);
    }
    for (const r of load.records.filter((x) => x.session === session)) {
      const span = spans.get(r.token);
      const starts = span?.starts ?? 0;
      if (starts === 0) figures.tokens.zero++;
      else if (starts === 1) figures.tokens.one++;
      else figures.tokens.many.push(`${r.token} started ${starts} times`);
      if (starts > 0 && !span?.ended) figures.unended++;
      if (r.command === 'ok' && !(starts === 1 && span?.ended)) figures.okWithoutRun.push(r.token);
    }
    await checkHistory(cluster, session, load, figures);
  }
  await checkAnswers(cluster, load, figures);
  return figures;
}

/** Every answered command's result is in the session's history, under its round, with the same status. */
async function checkHistory(cluster: Cluster, session: string, load: Load, figures: Figures): Promise<void> {
  const { json } = await untilAnswered(cluster, 0, `/v1/sessions/${session}/history`, undefined, undefined, 'GET');
  // biome-ignore lint/suspicious/noExplicitAny: the wire's history entries
  const history = (json as unknown as { results: any[] }).results;
  for (const r of load.records.filter((x) => x.session === session && x.answer)) {
    const result = r.answer?.results[0];
    const found = history.find((h) => h.round === r.answer?.round && h.id === result?.id);
    if (!found || found.status !== result?.status || found.error?.code !== result?.error?.code)
      figures.missingFromHistory.push(`${r.key}: ${JSON.stringify(found ?? 'absent')} vs ${JSON.stringify(result)}`);
  }
}

/** Each key sent again to every coordinator answers the first answer: the same round, the same result. */
async function checkAnswers(cluster: Cluster, load: Load, figures: Figures): Promise<void> {
  const answered = load.records.filter((r) => r.answer);
  await Promise.all(
    answered.map(async (r) => {
      const calls = [{ id: r.callId, name: 'run_command', args: { command: commandOf(r.callId, r.token) } }];
      for (const [i] of cluster.coordinators.entries()) {
        const got = await untilAnswered(cluster, i, `/v1/sessions/${r.session}/runs/r/rounds`, { calls }, r.key);
        const same = got.json.round === r.answer?.round && sameResult(got.json.results[0], r.answer?.results[0]);
        if (!same)
          figures.answersDiffering.push(
            `${r.key} on coordinator ${i}: ${JSON.stringify(got.json)} vs ${JSON.stringify(r.answer)}`,
          );
      }
    }),
  );
}

// biome-ignore lint/suspicious/noExplicitAny: wire results
function sameResult(a: any, b: any): boolean {
  return (
    a?.status === b?.status &&
    a?.error?.code === b?.error?.code &&
    JSON.stringify(a?.output) === JSON.stringify(b?.output)
  );
}

/**
 * From `from` (the cut) to the last answer of the rounds it caught: sent before it, answered after
 * it, and picked by `caught` (answered worker_lost, or sent again elsewhere).
 */
export function recoveryMs(load: Load, from: number, caught: (r: RoundRecord) => boolean = () => true): number {
  const hit = load.records.filter((r) => r.sentAt < from && (r.answeredAt ?? 0) >= from && caught(r));
  return Math.max(0, ...hit.map((r) => (r.answeredAt ?? from) - from));
}

/** From `from` (the heal) to the first answer of a round sent after it. */
export function firstAnswerAfter(load: Load, from: number): number {
  const after = load.records.filter((r) => r.sentAt >= from && r.answeredAt !== undefined);
  return Math.min(...after.map((r) => (r.answeredAt as number) - from));
}

export function printFigures(name: string, f: Figures, extra: Record<string, unknown>): void {
  console.log(
    `[partition] ${name}: ${JSON.stringify({
      rounds: f.rounds,
      answered: f.answered,
      byOutcome: f.byOutcome,
      overlaps: f.overlaps.length,
      tokens: { '0': f.tokens.zero, '1': f.tokens.one, N: f.tokens.many.length },
      workerLost: f.byOutcome['error/worker_lost'] ?? 0,
      unended: f.unended,
      okWithoutRun: f.okWithoutRun.length,
      missingFromHistory: f.missingFromHistory.length,
      answersDiffering: f.answersDiffering.length,
      ...extra,
    })}`,
  );
}
