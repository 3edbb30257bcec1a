// BENCH_ONLY=sandbox: what the sandbox (API.md v1.3) costs a command. run_command of `true`
// through the worker's handler, with the sandbox (bwrap, a cgroup per call, the limits) and with
// TD_SANDBOX=off, alternating call by call in this process so load hits both sides alike; the
// medians and their difference (the contract's aim: at most 20 ms added).
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { type HandlerContext, resolveSandboxConfig } from '@tool-dispatch/shared';
import { createRunCommand, createSandbox } from '@tool-dispatch/worker';

export interface SandboxFigures {
  calls: number;
  medianMs: { on: number; off: number };
  p90Ms: { on: number; off: number };
  addedMs: number;
}

const quantile = (xs: number[], q: number) => {
  const s = [...xs].sort((a, b) => a - b);
  return s[Math.min(s.length - 1, Math.floor(q * s.length))] ?? Number.NaN;
};

export async function benchSandbox(calls: number, progress: (line: string) => void): Promise<SandboxFigures> {
  const config = resolveSandboxConfig({}, {});
  const on = await createSandbox(config);
  if (on.mode !== 'on') throw new Error(`no sandbox on this machine: ${on.problem}`);
  const off = await createSandbox({ ...config, mode: 'off' });
  const run = { on: createRunCommand(on), off: createRunCommand(off) };
  const ws = mkdtempSync(path.join(tmpdir(), 'td-bench-sandbox-'));
  const ctx: HandlerContext = {
    signal: new AbortController().signal,
    workspace: ws,
    session: 'bench',
    tenant: 'default',
    run: 'r',
    round: 'rnd',
    toolCallId: 'c',
    callId: 'c',
    idempotencyKey: 'k',
    timeoutMs: 60_000,
    config: { httpAllow: [], searchUrl: undefined },
  };
  const ms: { on: number[]; off: number[] } = { on: [], off: [] };
  try {
    for (let i = 0; i < 10; i++) for (const side of ['on', 'off'] as const) await run[side]({ command: 'true' }, ctx); // warm-up
    for (let i = 0; i < calls; i++) {
      for (const side of i % 2 === 0 ? (['on', 'off'] as const) : (['off', 'on'] as const)) {
        const t0 = performance.now();
        await run[side]({ command: 'true' }, ctx);
        ms[side].push(performance.now() - t0);
      }
      if ((i + 1) % 100 === 0) progress(`sandbox: ${i + 1}/${calls} pairs`);
    }
  } finally {
    rmSync(ws, { recursive: true, force: true });
  }
  const medianMs = { on: quantile(ms.on, 0.5), off: quantile(ms.off, 0.5) };
  return {
    calls,
    medianMs,
    p90Ms: { on: quantile(ms.on, 0.9), off: quantile(ms.off, 0.9) },
    addedMs: medianMs.on - medianMs.off,
  };
}

export function printSandbox(f: SandboxFigures): void {
  console.log(`\nSandbox: run_command of \`true\`, ${f.calls} calls a side, alternating (handler level, this process)`);
  console.log(
    `  sandbox on   median ${f.medianMs.on.toFixed(1)} ms  p90 ${f.p90Ms.on.toFixed(1)} ms  (bwrap, a cgroup per call)`,
  );
  console.log(`  TD_SANDBOX=off median ${f.medianMs.off.toFixed(1)} ms  p90 ${f.p90Ms.off.toFixed(1)} ms`);
  console.log(`  added        ${f.addedMs.toFixed(1)} ms at the median (aim: at most 20 ms)`);
}
