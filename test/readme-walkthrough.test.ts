import { spawn } from 'node:child_process';
import { mkdtemp, readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { CliProcesses } from './support/cli-procs.js';

// The README's curl walk-through ("A session, step by step"), run as written, in order, in one
// shell, against a fresh `bin/tool-dispatch dev` on a free port (the only change to the commands:
// `127.0.0.1:8080` becomes that port). Each answer is compared with the one the README shows:
// as JSON, equal, except that
// - ids the service makes (`rnd_…`, `cf_…`, and the inputIds holding a round's id) may differ, as
//   long as each shown id stands for one real id, the same everywhere (and no two for one);
// - `createdAt`, `updatedAt`, `at`, `durationMs` and `idempotencyKey` (derived from the round id) need only have the shown value's type;
// - `workspace` is compared from `/.workspaces/` on (the test's root is a temp dir);
// - the string "…" stands for any value the README leaves out.
// An event stream (```text) is compared line by line, its `data:` lines as JSON by the same rules.
// Needs the build (`pnpm test` builds first).

const ROOT = fileURLToPath(new URL('..', import.meta.url));
const START = '<!-- walkthrough:start -->';
const END = '<!-- walkthrough:end -->';
const ANY = '…';
const TYPED_ONLY = new Set(['idempotencyKey', 'createdAt', 'updatedAt', 'at', 'durationMs']);
const SERVICE_ID = /(?:rnd|cf)_[0-9a-z]{16}/g;

interface Step {
  command: string;
  /** The answer shown after the command: JSON, an event stream, or nothing. */
  shown?: { lang: 'json' | 'text'; body: string };
}

/** The walk-through's steps: each ```sh block, with the ```json or ```text block after it. */
function walkthroughSteps(readme: string): Step[] {
  const from = readme.indexOf(START);
  const to = readme.indexOf(END);
  if (from < 0 || to < from) throw new Error(`README.md has no ${START} … ${END} section`);
  const steps: Step[] = [];
  for (const [, lang, body = ''] of readme.slice(from, to).matchAll(/^```(\w*)\n([\s\S]*?)^```$/gm)) {
    const last = steps.at(-1);
    if (lang === 'sh') steps.push({ command: body });
    else if ((lang === 'json' || lang === 'text') && last && !last.shown) last.shown = { lang, body };
    else throw new Error(`a \`\`\`${lang} block where a command or its one answer should be:\n${body}`);
  }
  return steps;
}

/** Where `actual` differs from `shown` under the rules above (empty when it does not). */
function differences(shown: unknown, actual: unknown, at: string, ids: IdMap, key = ''): string[] {
  if (shown === ANY) return [];
  if (TYPED_ONLY.has(key)) return typeof shown === typeof actual ? [] : [`${at}: ${JSON.stringify(actual)}`];
  if (key === 'workspace' && typeof shown === 'string' && typeof actual === 'string') {
    const tail = (p: string) => p.slice(p.indexOf('/.workspaces/'));
    return tail(shown) === tail(actual) ? [] : [`${at}: ${actual}`];
  }
  if (typeof shown === 'string' && typeof actual === 'string')
    return ids.match(shown, actual) ? [] : [`${at}: ${actual}`];
  if (Array.isArray(shown) && Array.isArray(actual)) {
    if (shown.length !== actual.length) return [`${at}: ${actual.length} items, ${shown.length} shown`];
    return shown.flatMap((s, i) => differences(s, actual[i], `${at}[${i}]`, ids));
  }
  if (isObject(shown) && isObject(actual)) {
    const keys = (o: object) => Object.keys(o).sort().join(',');
    if (keys(shown) !== keys(actual)) return [`${at}: keys ${keys(actual)}, shown ${keys(shown)}`];
    return Object.keys(shown).flatMap((k) => differences(shown[k], actual[k], `${at}.${k}`, ids, k));
  }
  return Object.is(shown, actual) ? [] : [`${at}: ${JSON.stringify(actual)}, shown ${JSON.stringify(shown)}`];
}

const isObject = (v: unknown): v is Record<string, unknown> => typeof v === 'object' && v !== null && !Array.isArray(v);

/** The README's service ids and the real ones they stand for, one for one. */
class IdMap {
  private readonly real = new Map<string, string>();
  private readonly shownOf = new Map<string, string>();

  /** Whether `actual` is `shown` with each service id replaced by the one it stands for. */
  match(shown: string, actual: string): boolean {
    const tokens = shown.match(SERVICE_ID) ?? [];
    const escaped = shown.split(SERVICE_ID).map((part) => part.replace(/[.*+?^${}()|[\]\\]/g, '\\$&'));
    const found = new RegExp(`^${escaped.join('((?:rnd|cf)_[0-9a-z]{16})')}$`).exec(actual);
    if (!found) return false;
    return tokens.every((token, i) => this.bind(token, found[i + 1] ?? ''));
  }

  private bind(shown: string, real: string): boolean {
    if ((this.real.get(shown) ?? real) !== real || (this.shownOf.get(real) ?? shown) !== shown) return false;
    this.real.set(shown, real);
    this.shownOf.set(real, shown);
    return true;
  }
}

/** An event stream's differences, line by line (`data:` lines as JSON). */
function streamDifferences(shown: string, actual: string, at: string, ids: IdMap): string[] {
  const lines = (s: string) => s.trimEnd().split('\n');
  const [want, got] = [lines(shown), lines(actual)];
  if (want.length !== got.length) return [`${at}: ${got.length} lines, ${want.length} shown:\n${actual}`];
  return want.flatMap((line, i) => {
    const real = got[i] ?? '';
    if (!line.startsWith('data: ')) return line === real ? [] : [`${at} line ${i + 1}: ${real}`];
    if (!real.startsWith('data: ')) return [`${at} line ${i + 1}: ${real}`];
    return differences(JSON.parse(line.slice(6)), JSON.parse(real.slice(6)), `${at} line ${i + 1}`, ids);
  });
}

const procs = new CliProcesses();
let dir = '';
let steps: Step[] = [];
let outputs: string[] = [];

beforeAll(async () => {
  steps = walkthroughSteps(await readFile(path.join(ROOT, 'README.md'), 'utf8'));
  dir = await mkdtemp(path.join(tmpdir(), 'td-walkthrough-'));
  const dev = await procs.start(
    ['dev'],
    {
      TD_WORKSPACE_ROOT: path.join(dir, '.workspaces'),
      PORT: '',
      REDIS_URL: '',
      REDIS_CLUSTER_NODES: '',
      TD_MCP_CONFIG: '',
      TD_API_TOKEN: '',
    },
    /listening on http:/,
  );
  // One shell, as a person pastes the commands; a marker after each splits what it printed.
  const script = steps
    .map((s, i) => `${s.command.replaceAll('127.0.0.1:8080', `127.0.0.1:${dev.port}`)}\nprintf '\\n@@step ${i}@@\\n'\n`)
    .join('');
  const stdout = await new Promise<string>((resolve, reject) => {
    const sh = spawn('sh', ['-c', script], { cwd: dir, stdio: ['ignore', 'pipe', 'inherit'] });
    let out = '';
    sh.stdout.on('data', (d: Buffer) => {
      out += d.toString();
    });
    const timer = setTimeout(() => sh.kill('SIGKILL'), 60_000);
    sh.once('error', reject);
    sh.once('exit', () => {
      clearTimeout(timer);
      resolve(out);
    });
  });
  outputs = stdout.split(/\n@@step \d+@@\n/);
  outputs.pop(); // after the last marker: nothing
  if (outputs.length !== steps.length) throw new Error(`ran ${outputs.length} of ${steps.length} steps:\n${stdout}`);
}, 120_000);

afterAll(async () => {
  procs.killAll('SIGKILL');
  if (dir) await rm(dir, { recursive: true, force: true });
});

describe('README walk-through', () => {
  it('is a section of commands, most with an answer, run against a dev on port 8080', () => {
    expect(steps.length).toBeGreaterThan(10);
    expect(steps[0]?.command).toContain('127.0.0.1:8080');
    expect(steps.filter((s) => s.shown).length).toBeGreaterThan(10);
  });

  it('gives every round its own Idempotency-Key', () => {
    const keys = steps.flatMap((s) => [...s.command.matchAll(/Idempotency-Key: ([^'"\s]+)/g)].map((m) => m[1]));
    expect(keys.length).toBe(steps.filter((s) => s.command.includes('/rounds')).length);
    expect(new Set(keys).size).toBe(keys.length);
  });

  it('answers each command as the README shows, in order', () => {
    const ids = new IdMap();
    const problems = steps.flatMap((step, i) => {
      const got = outputs[i] ?? '';
      const at = `step ${i + 1} (${step.command.trim().split('\n')[0]})`;
      if (!step.shown) return got.trim() === '' ? [] : [`${at}: printed ${got}, nothing shown`];
      if (step.shown.lang === 'text') return streamDifferences(step.shown.body, got, at, ids);
      let real: unknown;
      try {
        real = JSON.parse(got);
      } catch {
        return [`${at}: not one JSON value: ${got}`];
      }
      return differences(JSON.parse(step.shown.body), real, at, ids);
    });
    expect(problems).toEqual([]);
  });
});
