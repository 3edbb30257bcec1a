import { ToolError } from '@tool-dispatch/shared';

/**
 * Narrowing of handler args. Pass 1 validates args against the tool's schema, but handlers
 * are also called directly (tests, other embedders), so each checks what it relies on.
 * @internal
 */
export function requireString(args: Record<string, unknown>, name: string): string {
  const value = args[name];
  if (typeof value !== 'string') throw badArg(name, 'a string', value);
  return value;
}

/** @internal */
export function optionalString(args: Record<string, unknown>, name: string): string | undefined {
  const value = args[name];
  if (value === undefined) return undefined;
  if (typeof value !== 'string') throw badArg(name, 'a string', value);
  return value;
}

/** @internal */
export function optionalPositiveInt(args: Record<string, unknown>, name: string, max: number): number | undefined {
  const value = args[name];
  if (value === undefined) return undefined;
  if (typeof value !== 'number' || !Number.isInteger(value) || value < 1 || value > max) {
    throw badArg(name, `an integer from 1 to ${max}`, value);
  }
  return value;
}

/** @internal */
export function requireStringArray(args: Record<string, unknown>, name: string): string[] {
  const value = args[name];
  if (!Array.isArray(value) || !value.every((v) => typeof v === 'string')) {
    throw badArg(name, 'an array of strings', value);
  }
  return value;
}

/** @internal */
export function optionalStringRecord(args: Record<string, unknown>, name: string): Record<string, string> | undefined {
  const value = args[name];
  if (value === undefined) return undefined;
  if (!isPlainObject(value) || !Object.values(value).every((v) => typeof v === 'string')) {
    throw badArg(name, 'an object of string values', value);
  }
  return value as Record<string, string>;
}

/** @internal */
export function isPlainObject(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

function badArg(name: string, expected: string, got: unknown): ToolError {
  const kind = got === null ? 'null' : Array.isArray(got) ? 'an array' : typeof got;
  return new ToolError('handler_error', `args.${name} must be ${expected}, got ${kind}`);
}
