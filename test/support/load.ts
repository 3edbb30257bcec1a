import { readFile } from 'node:fs/promises';
import path from 'node:path';
import type { LimitTarget } from './limit-target.js';

// A load of agent sessions against real coordinators: each session runs rounds one after another
// (as an agent loop does), each round mixing concurrent reads and HTTP GETs with an edit_file and a
// run_command that appends a token unique to the round. A round whose coordinator fails to answer
// (connection lost, 5xx) is retried under its Idempotency-Key on the next coordinator.

/** Per-round figures a fault report is made of. */
export interface RoundRecord {
  session: string;
  run: string;
  round: number;
  startedAt: number;
  answeredAt: number | undefined;
  /** Submissions of the round (1 when the first one was answered). */
  attempts: number;
  statuses: string[];
  /** The run_command's status (with its error code, when it failed). */
  command: string;
  /** Calls sent in the round (the mixed calls and any `extraCalls`). */
  callCount: number;
  /** The extra calls' statuses, `status` or `status/code`, in order (LoadOptions.extraCalls). */
  extras: string[];
}

/** A call as a round carries it. */
export interface LoadCall {
  id: string;
  name: string;
  args: Record<string, unknown>;
}

export interface LoadOptions {
  /** The coordinators' ports, read at each submission (a test replaces a killed one). */
  ports: () => readonly number[];
  sessions: number;
  durationMs: number;
  target: LimitTarget;
  workspaceRoot: string;
  /** How long each GET and the command's own request stay in flight at the target. */
  holdMs?: number;
  label?: string;
  /**
   * Calls put before a round's mixed calls (a fault under test), asked for each round as it
   * starts; their results are kept apart in `RoundRecord.extras`.
   */
  extraCalls?: (session: string, round: number) => LoadCall[];
  /** Tools `extraCalls` may call: their schemas are fetched (find_tools) in each session's first round. */
  extraTools?: readonly string[];
}

export interface LoadReport {
  rounds: RoundRecord[];
  /** Rounds submitted and never answered with one result per call (must be 0). */
  lost: number;
  /** Tokens found more than once in a workspace: a side effect run twice (must be 0). */
  twice: string[];
  /** Rounds whose command ended ok but whose token is missing: a side effect reported and not run (must be 0). */
  missing: string[];
  /** Tokens whose round answered the command as not run (cancelled, denied…) yet present. */
  unexpected: string[];
  statusCounts: Record<string, number>;
  durationMs: number;
}

export const GETS_PER_ROUND = 6;

// `key` names the session in the target URLs: unique, so no GET is ever answered from the result cache.
const callsOf = (target: LimitTarget, key: string, round: number, token: string, holdMs: number) => [
  { id: 'read', name: 'read_files', args: { paths: ['notes.txt'] } },
  ...Array.from({ length: GETS_PER_ROUND }, (_, i) => ({
    id: `get${i}`,
    name: 'http_request',
    args: { url: target.url(key, 'c', `${round}.${i}`, holdMs), method: 'GET' },
  })),
  { id: 'edit', name: 'edit_file', args: { path: 'notes.txt', content: `round ${round}\n` } },
  {
    id: 'cmd',
    name: 'run_command',
    args: {
      command: `curl -sf -o /dev/null '${target.url(key, 's', String(round), holdMs)}' && echo ${token} >> tokens.txt`,
    },
  },
];

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

async function post(port: number, p: string, body: unknown, key?: string) {
  const res = await fetch(`http://127.0.0.1:${port}${p}`, {
    method: p.includes('/rounds') ? 'POST' : 'PUT',
    headers: { 'content-type': 'application/json', ...(key ? { 'idempotency-key': key } : {}) },
    body: JSON.stringify(body),
    signal: AbortSignal.timeout(120_000),
  });
  // biome-ignore lint/suspicious/noExplicitAny: checked by the caller
  return { status: res.status, json: (await res.json().catch(() => null)) as any };
}

/** Sends until some coordinator answers 200 (another coordinator after a failure), giving up after `giveUpMs`. */
async function submit(
  options: LoadOptions,
  p: string,
  body: unknown,
  key: string | undefined,
  giveUpMs = 90_000,
): Promise<{ json: { results?: Array<{ status: string; error?: { code: string } }> }; attempts: number } | undefined> {
  const end = Date.now() + giveUpMs;
  for (let attempt = 1; Date.now() < end; attempt++) {
    const ports = options.ports();
    const port = ports[(attempt - 1) % ports.length];
    if (port === undefined) throw new Error('no coordinator');
    try {
      const r = await post(port, p, body, key);
      if (r.status === 200) return { json: r.json, attempts: attempt };
      if (r.status < 500 && r.status !== 404) throw new Error(`${p}: ${r.status} ${JSON.stringify(r.json)}`);
    } catch (e) {
      if (e instanceof Error && /^\/v1/.test(e.message)) throw e;
    }
    await sleep(Math.min(1_000, 100 * attempt));
  }
  return undefined;
}

async function runSession(
  options: LoadOptions,
  index: number,
  until: { at: number },
  records: RoundRecord[],
): Promise<void> {
  const session = `${options.label ?? 'load'}-${index}-${Date.now().toString(36)}`;
  const base = `/v1/sessions/${session}`;
  const run = `run-${index}`;
  const holdMs = options.holdMs ?? 30;
  if (!(await submit(options, base, { provider: 'claude-code', autoApprove: 'all' }, undefined)))
    throw new Error(`session ${session} could not be created`);
  // claude-code: a tool's first call answers its schema; this round shows them all and seeds the file.
  const schemaRound: LoadCall[] = callsOf(options.target, session, 0, 'seed', holdMs);
  if (options.extraTools?.length)
    schemaRound.push({ id: 'extra', name: 'find_tools', args: { names: [...options.extraTools] } });
  await submit(options, `${base}/runs/${run}/rounds`, { calls: schemaRound }, `${session}-schema`);
  await submit(
    options,
    `${base}/runs/${run}/rounds`,
    { calls: [{ id: 'seed', name: 'edit_file', args: { path: 'notes.txt', content: 'seed\n' } }] },
    `${session}-seed`,
  );
  for (let round = 1; Date.now() < until.at; round++) {
    const token = `tok-${session}-${round}`;
    const extra = options.extraCalls?.(session, round) ?? [];
    const calls = [...extra, ...callsOf(options.target, session, round, token, holdMs)];
    const record: RoundRecord = {
      session,
      run,
      round,
      startedAt: Date.now(),
      answeredAt: undefined,
      attempts: 0,
      statuses: [],
      command: 'unanswered',
      callCount: calls.length,
      extras: [],
    };
    records.push(record);
    const answer = await submit(options, `${base}/runs/${run}/rounds`, { calls }, `${session}-r${round}`);
    if (!answer) return;
    record.answeredAt = Date.now();
    record.attempts = answer.attempts;
    const results = answer.json.results ?? [];
    record.statuses = results.map((r) => r.status);
    const statusOf = (r: { status: string; error?: { code: string } } | undefined) =>
      r ? (r.error ? `${r.status}/${r.error.code}` : r.status) : 'absent';
    record.command = statusOf(results[calls.length - 1]);
    record.extras = extra.map((_, i) => statusOf(results[i]));
  }
}

/**
 * Starts `sessions` agent loops for `durationMs`; `done` checks every round's answer and every
 * token once they end. `rounds` fills as they go (for a test timing its faults).
 */
export function startLoad(options: LoadOptions): {
  rounds: RoundRecord[];
  /** Ends the load now (no new rounds; those in flight finish), whatever `durationMs` said. */
  stop(): void;
  done: Promise<LoadReport>;
} {
  const rounds: RoundRecord[] = [];
  const started = Date.now();
  const until = { at: started + options.durationMs };
  const done = Promise.all(
    Array.from({ length: options.sessions }, (_, i) => runSession(options, i, until, rounds)),
  ).then(() => reportOf(options, rounds, Date.now() - started));
  return {
    rounds,
    stop: () => {
      until.at = Date.now();
    },
    done,
  };
}

/**
 * Resolves once every round in flight at `at` is answered: how long after `at` the last of them
 * was (the time to recover from a fault at `at`), and how many there were.
 */
export async function recovered(
  rounds: readonly RoundRecord[],
  at: number,
  timeoutMs = 90_000,
): Promise<{ ms: number; caught: number }> {
  const caught = rounds.filter((r) => r.startedAt <= at && (r.answeredAt === undefined || r.answeredAt > at));
  const end = Date.now() + timeoutMs;
  while (caught.some((r) => r.answeredAt === undefined)) {
    if (Date.now() > end) {
      const stuck = caught.filter((r) => !r.answeredAt);
      const first = stuck[0];
      throw new Error(
        `${stuck.length} rounds not answered within ${timeoutMs} ms of the fault (first: ${first?.session} round ${first?.round}, started ${first ? at - first.startedAt : 0} ms before it)`,
      );
    }
    await sleep(50);
  }
  // Later rounds too: the first one started after the fault and answered marks service restored.
  for (;;) {
    const next = rounds.find((r) => r.startedAt > at && r.answeredAt !== undefined);
    if (next || Date.now() > end) {
      const last = Math.max(at, ...caught.map((r) => r.answeredAt ?? at), next?.answeredAt ?? at);
      return { ms: last - at, caught: caught.length };
    }
    await sleep(50);
  }
}

async function reportOf(options: LoadOptions, rounds: RoundRecord[], durationMs: number): Promise<LoadReport> {
  const lost = rounds.filter((r) => r.answeredAt === undefined || r.statuses.length !== r.callCount).length;
  const statusCounts: Record<string, number> = {};
  for (const r of rounds) for (const s of r.statuses) statusCounts[s] = (statusCounts[s] ?? 0) + 1;
  const twice: string[] = [];
  const missing: string[] = [];
  const unexpected: string[] = [];
  const bySession = new Map<string, RoundRecord[]>();
  for (const r of rounds) bySession.set(r.session, [...(bySession.get(r.session) ?? []), r]);
  for (const [session, list] of bySession) {
    const text = await readFile(path.join(options.workspaceRoot, 'default', session, 'tokens.txt'), 'utf8').catch(
      () => '',
    );
    const counts = new Map<string, number>();
    for (const t of text.split('\n').filter(Boolean)) counts.set(t, (counts.get(t) ?? 0) + 1);
    for (const r of list) {
      const token = `tok-${session}-${r.round}`;
      const n = counts.get(token) ?? 0;
      if (n > 1) twice.push(`${token} ×${n}`);
      if (r.command === 'ok' && n !== 1) missing.push(token);
      // worker_lost: the outcome is unknown, so 0 or 1; anything else that is not ok never ran it.
      if (r.command !== 'ok' && r.command !== 'error/worker_lost' && r.command !== 'unanswered' && n > 0)
        unexpected.push(`${token} (${r.command})`);
    }
  }
  return { rounds, lost, twice, missing, unexpected, statusCounts, durationMs };
}
