import { execFile } from 'node:child_process';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { REPO_ROOT } from '../conformance/service.js';

// The MCP Inspector's CLI mode (`@modelcontextprotocol/inspector --cli`), run as a person or a CI
// script runs it: a child process per command, against a `/mcp` URL over Streamable HTTP, its
// answer read from stdout (`--format json`). Its catalog and stored state go to a temp HOME.

const LAUNCHER = path.join(
  REPO_ROOT,
  'node_modules',
  '@modelcontextprotocol',
  'inspector',
  'clients',
  'launcher',
  'build',
  'index.js',
);

export interface InspectorRun {
  code: number;
  stdout: string;
  stderr: string;
  /** stdout parsed (`{"result": …}`), when it is JSON. */
  json: { result?: Record<string, unknown>; error?: unknown } | undefined;
}

/** `inspector --cli <url> --transport http --format json <args…>`; never rejects (exit code in the answer). */
export function inspectorCli(url: string, args: string[], token?: string): Promise<InspectorRun> {
  const auth = token ? ['--header', `Authorization: Bearer ${token}`] : [];
  return inspector([url, '--transport', 'http', ...auth, ...args]);
}

/** `inspector --cli <target…> --format json <args…>`: a URL with its options, or a command to launch over stdio. */
export async function inspector(args: string[]): Promise<InspectorRun> {
  const home = await mkdtemp(path.join(tmpdir(), 'td-inspector-'));
  try {
    return await new Promise<InspectorRun>((resolve) => {
      execFile(
        process.execPath,
        [LAUNCHER, '--cli', ...args, '--format', 'json'],
        { env: { PATH: process.env.PATH, HOME: home }, timeout: 90_000, maxBuffer: 16 * 1024 * 1024 },
        (error, stdout, stderr) => {
          const code = error ? (typeof error.code === 'number' ? error.code : 1) : 0;
          let json: InspectorRun['json'];
          try {
            json = JSON.parse(stdout);
          } catch {
            json = undefined;
          }
          resolve({ code, stdout, stderr, json });
        },
      );
    });
  } finally {
    await rm(home, { recursive: true, force: true });
  }
}
