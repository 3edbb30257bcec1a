/**
 * Runs Prometheus's `promtool` on texts the tests produce. promtool comes from Debian's
 * `prometheus` package (`apt-get install -y prometheus` gives /usr/bin/promtool; .ci/run
 * installs it). A test that needs it fails, saying so, when it is missing: never a silent skip.
 */
import { execFile } from 'node:child_process';
import { accessSync, constants, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { delimiter, join } from 'node:path';

export const PROMTOOL_INSTALL = 'apt-get update && apt-get install -y --no-install-recommends prometheus';

export interface PromtoolResult {
  ok: boolean;
  /** promtool's stdout and stderr: the lint problems or parse errors when not ok. */
  output: string;
}

/** The first promtool on PATH; undefined when there is none. */
export function findPromtool(): string | undefined {
  for (const dir of (process.env.PATH ?? '').split(delimiter)) {
    if (!dir) continue;
    const candidate = join(dir, 'promtool');
    try {
      accessSync(candidate, constants.X_OK);
      return candidate;
    } catch {
      // not this one
    }
  }
  return undefined;
}

/** The promtool path, or an error that says how to install it. */
export function requirePromtool(): string {
  const found = findPromtool();
  if (found) return found;
  throw new Error(
    `promtool is not installed, and this test needs it to check the metrics exposition. Install it with \`${PROMTOOL_INSTALL}\` (Debian's prometheus package; .ci/run does this).`,
  );
}

function runPromtool(args: readonly string[], input?: string): Promise<PromtoolResult> {
  const promtool = requirePromtool();
  return new Promise((resolve, reject) => {
    const child = execFile(promtool, args, { timeout: 30_000 }, (error, stdout, stderr) => {
      const output = `${stdout}${stderr}`.trim();
      if (error && typeof error.code !== 'number')
        reject(new Error(`promtool ${args.join(' ')} failed to run: ${error.message}`));
      else resolve({ ok: !error, output });
    });
    if (input !== undefined) child.stdin?.end(input);
  });
}

/** `promtool check metrics` on an exposition text (lint included: names, suffixes, help). */
export function checkMetrics(exposition: string): Promise<PromtoolResult> {
  return runPromtool(['check', 'metrics'], exposition);
}

/** `promtool check config` on a Prometheus configuration file. */
export function checkConfig(path: string): Promise<PromtoolResult> {
  return runPromtool(['check', 'config', '--syntax-only', path]);
}

/**
 * Checks that each PromQL expression parses, by writing them as recording rules and running
 * `promtool check rules` (promtool has no bare expression check).
 */
export async function checkPromQL(expressions: readonly string[]): Promise<PromtoolResult> {
  const dir = mkdtempSync(join(tmpdir(), 'td-promql-'));
  try {
    const file = join(dir, 'rules.yml');
    const rules = expressions.map((expr, i) => `      - record: td:check_${i}\n        expr: ${JSON.stringify(expr)}`);
    writeFileSync(file, `groups:\n  - name: check\n    rules:\n${rules.join('\n')}\n`);
    return await runPromtool(['check', 'rules', file]);
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

/** Throws with promtool's own words when the exposition is not clean. */
export async function expectCleanMetrics(exposition: string): Promise<void> {
  const result = await checkMetrics(exposition);
  if (!result.ok)
    throw new Error(`promtool check metrics found problems:\n${result.output}\n--- exposition ---\n${exposition}`);
}
