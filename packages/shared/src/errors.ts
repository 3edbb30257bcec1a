import type { ErrorCode } from './result.js';

const MARKER = Symbol.for('tool-dispatch.error');

/**
 * An error a handler or the infrastructure throws on purpose, carrying the wire code.
 * The marker symbol makes `isToolError` work across package copies.
 */
export class ToolError extends Error {
  readonly [MARKER] = true;
  constructor(
    readonly code: ErrorCode,
    message: string,
    readonly details?: unknown,
  ) {
    super(message);
    this.name = 'ToolError';
  }
}

export function isToolError(e: unknown): e is ToolError {
  return typeof e === 'object' && e !== null && (e as Record<symbol, unknown>)[MARKER] === true;
}

/** Infrastructure failures (store unreachable, bad configuration): bugs or outages, not call outcomes. */
export class DispatchError extends Error {
  constructor(
    readonly code: string,
    message: string,
    options?: ErrorOptions,
  ) {
    super(message, options);
    this.name = 'DispatchError';
  }
}

/** A configuration the process cannot start with (a bad TD_MCP_CONFIG, say): the CLI exits 2 naming the problem. */
export class ConfigError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'ConfigError';
  }
}
