import { readFileSync } from 'node:fs';
import { ConfigError } from '@tool-dispatch/shared';
import { type NamedLimits, parseNamedLimits } from '../rules/named-limits.js';

/**
 * The limits TD_LIMITS names (API.md "Limits that queue"), checked before anything starts: a bad
 * file is a ConfigError (the CLI exits 2 naming the problem). Unset: no named limits.
 */
export function namedLimitsFrom(env: NodeJS.ProcessEnv): NamedLimits | undefined {
  const file = env.TD_LIMITS;
  if (!file) return undefined;
  let text: string;
  try {
    text = readFileSync(file, 'utf8');
  } catch (e) {
    throw new ConfigError(`TD_LIMITS ${file} cannot be read: ${e instanceof Error ? e.message : String(e)}`);
  }
  return parseNamedLimits(text, file);
}
