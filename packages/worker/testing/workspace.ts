import { mkdtemp, realpath, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import type { HandlerConfig, HandlerContext } from '@tool-dispatch/shared';

/** A fresh real temp directory to use as a session workspace. For tests only. @internal */
export async function makeWorkspace(): Promise<{ dir: string; cleanup: () => Promise<void> }> {
  const dir = await realpath(await mkdtemp(path.join(tmpdir(), 'td-worker-')));
  return { dir, cleanup: () => rm(dir, { recursive: true, force: true }) };
}

/** A handler context over `workspace`, with overrides. For tests only. @internal */
export function makeContext(
  workspace: string,
  overrides: Partial<Omit<HandlerContext, 'config'>> & { config?: Partial<HandlerConfig> } = {},
): HandlerContext {
  const { config, ...rest } = overrides;
  return {
    signal: new AbortController().signal,
    workspace,
    session: 's1',
    tenant: 'default',
    run: 'r1',
    round: 'rnd_1',
    toolCallId: 'c1',
    callId: 'c1',
    idempotencyKey: 'td_test_c1',
    timeoutMs: 60_000,
    ...rest,
    config: { httpAllow: [], searchUrl: undefined, ...config },
  };
}
