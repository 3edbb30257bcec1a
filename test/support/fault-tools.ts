import { appendFileSync } from 'node:fs';
import path from 'node:path';
import type { Handler, ToolDefinition } from '../../packages/shared/src/index.js';
import type { HandlerRegistry } from '../../packages/worker/src/registry.js';

// User tools that misbehave on purpose, for the fault tests under load (test/reliability/faults.test.ts).
// Each appends `<token>` to a file in the session's workspace when its side effect happens, so the
// test counts how many times each call really ran. Args: {token, ms}.

/** The file of the workspace each fault tool appends its tokens to. */
export const FAULT_FILES = {
  ext_stubborn: 'stubborn.txt',
  ext_block: 'block.txt',
  ext_block_c: 'block-c.txt',
} as const;

/** The deadline of ext_stubborn: its handler outlives it, ignoring the abort. */
export const STUBBORN_TIMEOUT_MS = 1_000;

const params = {
  type: 'object',
  properties: { token: { type: 'string' }, ms: { type: 'number' } },
  required: ['token', 'ms'],
  additionalProperties: false,
};

export const FAULT_TOOL_DEFINITIONS: readonly ToolDefinition[] = [
  {
    name: 'ext_stubborn',
    description: 'Ignores its abort signal: waits ms, then records its token (past its deadline).',
    parameters: params,
    concurrency: 'concurrent',
    timeoutMs: STUBBORN_TIMEOUT_MS,
  },
  {
    name: 'ext_block',
    description: 'Blocks its worker’s event loop for ms, then records its token (serial).',
    parameters: params,
    concurrency: 'serial',
    timeoutMs: 30_000,
  },
  {
    name: 'ext_block_c',
    description: 'Blocks its worker’s event loop for ms, then records its token (concurrent).',
    parameters: params,
    concurrency: 'concurrent',
    timeoutMs: 30_000,
  },
];

const record = (file: string, workspace: string, token: string) =>
  appendFileSync(path.join(workspace, file), `${token}\n`);

/** Waits `ms` whatever its signal says, then records: a handler that ignores its abort. */
const stubborn: Handler = async function ignoreAbort(args, ctx) {
  await new Promise((r) => setTimeout(r, Number(args.ms)));
  record(FAULT_FILES.ext_stubborn, ctx.workspace, String(args.token));
  return { late: true };
};

/** Spins `ms` without yielding: no lock renewal, no heartbeat, no other job of the worker moves. */
function blocking(file: string): Handler {
  return async function blockEventLoop(args, ctx) {
    const end = Date.now() + Number(args.ms);
    while (Date.now() < end) {
      /* busy: the event loop is blocked */
    }
    record(file, ctx.workspace, String(args.token));
    return { blockedMs: Number(args.ms) };
  };
}

export function registerFaultTools(registry: HandlerRegistry): HandlerRegistry {
  registry.register('ext_stubborn', stubborn);
  registry.register('ext_block', blocking(FAULT_FILES.ext_block));
  registry.register('ext_block_c', blocking(FAULT_FILES.ext_block_c));
  return registry;
}
