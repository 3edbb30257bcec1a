import { resolveSandboxConfig, type SandboxConfig } from '@tool-dispatch/shared';
import { describeSandbox, type Sandbox, sandboxOf } from '@tool-dispatch/worker';

/** TD_SANDBOX*, checked before anything starts (a bad value: ConfigError, exit 2). */
export function sandboxConfigFrom(env: NodeJS.ProcessEnv = process.env): SandboxConfig {
  return resolveSandboxConfig({}, env);
}

/**
 * The sandbox this process's commands run in, probed once (API.md v1.3): its mode, or why there is
 * none and the fix, is logged once; with none, run_command ends `sandbox_unavailable` and the rest runs.
 */
export async function startSandbox(config: SandboxConfig, log: (line: string) => void): Promise<Sandbox> {
  const sandbox = await sandboxOf(config);
  log(describeSandbox(sandbox, config));
  return sandbox;
}
