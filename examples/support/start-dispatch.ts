import { type ChildProcess, spawn } from 'node:child_process';
import { existsSync } from 'node:fs';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

/** A running tool-dispatch coordinator (embedded mode) the example talks to. */
export interface Dispatch {
  url: string;
  stop(): Promise<void>;
}

/** The repo's root: the first folder above this file holding bin/tool-dispatch (from src or from dist/). */
function repoRoot(): string {
  let dir = path.dirname(fileURLToPath(import.meta.url));
  while (!existsSync(path.join(dir, 'bin', 'tool-dispatch'))) {
    const up = path.dirname(dir);
    if (up === dir) throw new Error('bin/tool-dispatch not found above the example: run it from the repo');
    dir = up;
  }
  return dir;
}

/**
 * Starts `bin/tool-dispatch dev` (coordinator and handlers in one process, no Redis) on a free
 * loopback port, over a fresh workspace root, and resolves once it prints `listening on <url>`.
 */
export async function startDispatch(): Promise<Dispatch> {
  const workspaceRoot = await mkdtemp(path.join(tmpdir(), 'td-example-'));
  const child = spawn(path.join(repoRoot(), 'bin', 'tool-dispatch'), ['dev', '--port', '0', '--host', '127.0.0.1'], {
    env: { ...process.env, TD_WORKSPACE_ROOT: workspaceRoot },
    stdio: ['ignore', 'pipe', 'inherit'],
  });
  const url = await listeningUrl(child);
  return {
    url,
    async stop() {
      const exited = new Promise((resolve) => child.once('exit', resolve));
      child.kill('SIGTERM');
      await exited;
      await rm(workspaceRoot, { recursive: true, force: true });
    },
  };
}

function listeningUrl(child: ChildProcess): Promise<string> {
  return new Promise((resolve, reject) => {
    let seen = '';
    const timer = setTimeout(() => fail(new Error(`tool-dispatch dev did not start within 30 s:\n${seen}`)), 30_000);
    const onExit = (code: number | null) => fail(new Error(`tool-dispatch dev exited (${code}):\n${seen}`));
    function fail(error: Error) {
      clearTimeout(timer);
      child.kill('SIGKILL');
      reject(error);
    }
    function onDispatchOutput(chunk: Buffer) {
      seen += chunk.toString();
      const match = /listening on (http:\/\/\S+)/.exec(seen);
      if (!match?.[1]) return;
      clearTimeout(timer);
      child.off('exit', onExit);
      child.stdout?.off('data', onDispatchOutput);
      child.stdout?.resume(); // keep draining its later lines
      resolve(match[1]);
    }
    child.once('exit', onExit);
    child.stdout?.on('data', onDispatchOutput);
  });
}
