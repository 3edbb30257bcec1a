import { type ChildProcess, spawn } from 'node:child_process';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { freePort } from './net.js';
import { until } from './until.js';

// Real `bin/tool-dispatch` processes for fault tests (SIGKILL of a coordinator, takeovers): each in
// its own process group, started on a free port, ready once its output matches.
const root = fileURLToPath(new URL('../..', import.meta.url));
const bin = path.join(root, 'bin', 'tool-dispatch');

export interface Proc {
  child: ChildProcess;
  output: string[];
  port: number;
}

/** The processes a test file started, for its afterAll to kill. */
export class CliProcesses {
  readonly procs: Proc[] = [];

  /** Starts `tool-dispatch <args> --port <free>` and resolves once its output matches `waitFor`. */
  start(args: string[], env: Record<string, string>, waitFor: RegExp): Promise<Proc> {
    return this.spawnReady(bin, args, env, waitFor, args[0] ?? 'tool-dispatch');
  }

  /** Starts `tool-dispatch coordinator` on loopback and resolves once its /readyz answers 200. */
  async startCoordinator(env: Record<string, string>, readyWithinMs = 30_000): Promise<Proc> {
    const c = await this.start(['coordinator', '--host', '127.0.0.1'], env, /listening on/);
    await until(async () => (await api(c.port, 'GET', '/readyz')).status === 200, {
      timeoutMs: readyWithinMs,
      what: 'coordinator ready',
    });
    return c;
  }

  /** Starts `<wrapper...> tool-dispatch <args> --port <free>` (a program that execs the rest, a seccomp filter say). */
  startUnder(wrapper: string[], args: string[], env: Record<string, string>, waitFor: RegExp): Promise<Proc> {
    const [file, ...rest] = wrapper;
    if (file === undefined) throw new Error('startUnder needs a wrapper program');
    return this.spawnReady(file, [...rest, bin, ...args], env, waitFor, `${wrapper.join(' ')} ${args[0] ?? ''}`);
  }

  /** Starts a TypeScript script of the repository (tsx, td-source) as `start` does: `<script> <args> --port <free>`. */
  startScript(script: string, args: string[], env: Record<string, string>, waitFor: RegExp): Promise<Proc> {
    const node = ['--conditions=td-source', '--import', 'tsx', path.join(root, script)];
    return this.spawnReady(process.execPath, [...node, ...args], env, waitFor, `${script} ${args.join(' ')}`);
  }

  private async spawnReady(file: string, args: string[], env: Record<string, string>, waitFor: RegExp, what: string) {
    const port = await freePort();
    const child = spawn(file, [...args, '--port', String(port)], {
      cwd: root,
      env: { ...process.env, ...env },
      detached: true,
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    const proc: Proc = { child, output: [], port };
    this.procs.push(proc);
    await new Promise<void>((resolve, reject) => {
      const timer = setTimeout(() => reject(new Error(`${what} did not start:\n${proc.output.join('')}`)), 90_000);
      const onData = (d: Buffer) => {
        proc.output.push(d.toString());
        if (waitFor.test(proc.output.join(''))) {
          clearTimeout(timer);
          resolve();
        }
      };
      child.stdout?.on('data', onData);
      child.stderr?.on('data', onData);
      child.once('exit', (code) => reject(new Error(`${what} exited (${code}):\n${proc.output.join('')}`)));
    });
    return proc;
  }

  killAll(signal: NodeJS.Signals): void {
    for (const p of this.procs) killGroup(p, signal);
  }
}

export function killGroup(p: Proc, signal: NodeJS.Signals): void {
  try {
    if (p.child.pid) process.kill(-p.child.pid, signal);
  } catch {
    /* gone */
  }
}

/** One JSON request to a process's HTTP API on loopback. */
export async function api(
  port: number,
  method: string,
  p: string,
  body?: unknown,
  headers: Record<string, string> = {},
) {
  const res = await fetch(`http://127.0.0.1:${port}${p}`, {
    method,
    headers: { 'content-type': 'application/json', ...headers },
    ...(body === undefined ? {} : { body: JSON.stringify(body) }),
  });
  // biome-ignore lint/suspicious/noExplicitAny: answers checked by the test
  return { status: res.status, json: (await res.json().catch(() => null)) as any };
}
