import { resolveSandboxConfig, type SandboxConfig } from '@tool-dispatch/shared';
import { type CreateSandboxOptions, createSandbox } from './create.js';
import type { Sandbox } from './sandbox.js';

/** The worker's files named in its environment, hidden from sandboxes even under a system dir. */
export const WORKER_FILE_VARIABLES = ['TD_API_TOKENS', 'TD_MCP_CONFIG', 'TD_LIMITS', 'TD_REDIS_TLS_CA'] as const;

export function workerFiles(env: NodeJS.ProcessEnv = process.env): string[] {
  return WORKER_FILE_VARIABLES.map((k) => env[k]).filter((v): v is string => Boolean(v));
}

let shared: Promise<Sandbox> | undefined;

/**
 * This process's sandbox from its environment (TD_SANDBOX*), made and probed once on first use:
 * what `runCommand` runs in when nobody handed it one (tests, a registry built without options).
 */
export function processSandbox(): Promise<Sandbox> {
  shared ??= createSandbox(resolveSandboxConfig({}, process.env), { hide: workerFiles() });
  return shared;
}

let forMcp: Promise<Sandbox> | undefined;

/**
 * The sandbox of the stdio MCP servers that ask for one (`"sandbox"` in TD_MCP_CONFIG): this
 * process's limits and TD_SANDBOX_READ, always confined (a server's own ask wins over TD_SANDBOX=off).
 */
export function mcpServerSandbox(): Promise<Sandbox> {
  forMcp ??= createSandbox(
    { ...resolveSandboxConfig({}, process.env), mode: 'on', net: { mode: 'none' } },
    { hide: workerFiles() },
  );
  return forMcp;
}

/** A process's sandbox from `config`, its worker files hidden. */
export function sandboxOf(config: SandboxConfig, options: CreateSandboxOptions = {}): Promise<Sandbox> {
  return createSandbox(config, { hide: workerFiles(), ...options });
}

/** The line a worker logs once at start about its sandbox. */
export function describeSandbox(sandbox: Sandbox, config: SandboxConfig): string {
  if (sandbox.mode === 'unavailable') return `sandbox unavailable: ${sandbox.problem}`;
  if (sandbox.mode === 'off') return 'sandbox off (TD_SANDBOX=off): commands run unconfined, as before v1.3';
  const net = config.net.mode === 'allow' ? config.net.patterns.join(',') : config.net.mode;
  return `sandbox on: bwrap per command, network ${net}, memory ${config.memoryMb} MB, ${config.pids} processes, files up to ${config.fileMb} MB`;
}
