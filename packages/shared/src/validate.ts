import { Ajv, type ErrorObject, type ValidateFunction } from 'ajv';
import addFormatsModule from 'ajv-formats';
import { canonicalJson } from './canonical.js';

// ajv-formats ships CommonJS with a default export; under NodeNext it arrives as the module object.
const addFormats = ((addFormatsModule as unknown as { default?: unknown }).default ?? addFormatsModule) as unknown as (
  ajv: Ajv,
) => Ajv;

const ajv = new Ajv({ allErrors: true, strict: false, allowUnionTypes: true });
addFormats(ajv);
const compiled = new Map<string, ValidateFunction | Error>();
/**
 * The same, by schema object: a tool's schema is one object call after call, and its canonical
 * text cost more than the validation itself. (ajv keeps compiled schemas by object too, so a
 * schema changed in place after its first use was never recompiled.)
 */
const compiledFor = new WeakMap<object, ValidateFunction | Error>();

export type Validation = { valid: true } | { valid: false; problems: string[] };

/** Validates a value against a JSON schema; each schema is compiled once and kept. */
export function validateAgainst(schema: Record<string, unknown>, value: unknown): Validation {
  let fn = compiledFor.get(schema);
  if (!fn) {
    fn = compiledByText(schema);
    compiledFor.set(schema, fn);
  }
  if (fn instanceof Error) return { valid: false, problems: [`the tool's schema does not compile: ${fn.message}`] };
  if (fn(value)) return { valid: true };
  return { valid: false, problems: describeErrors(fn.errors ?? []) };
}

/** The validator of a schema equal to this one (same canonical text), compiled now if there is none. */
function compiledByText(schema: Record<string, unknown>): ValidateFunction | Error {
  const key = canonicalJson(schema);
  let fn = compiled.get(key);
  if (!fn) {
    try {
      fn = ajv.compile(schema);
    } catch (e) {
      fn = e instanceof Error ? e : new Error(String(e));
    }
    compiled.set(key, fn);
  }
  return fn;
}

/** Whether a JSON schema compiles (for definitions registered at run time). */
export function schemaProblem(schema: unknown): string | undefined {
  if (!schema || typeof schema !== 'object' || Array.isArray(schema)) return 'parameters must be a JSON schema object';
  try {
    ajv.compile(schema as Record<string, unknown>);
    return undefined;
  } catch (e) {
    return e instanceof Error ? e.message : String(e);
  }
}

/** ajv errors in words a model can act on: where, what is wrong, and what was expected. */
function describeErrors(errors: readonly ErrorObject[]): string[] {
  const out = new Set<string>();
  for (const e of errors) {
    const at = e.instancePath ? `args${e.instancePath.replace(/\/(\d+)/g, '[$1]').replace(/\//g, '.')}` : 'args';
    const p = e.params as Record<string, unknown>;
    switch (e.keyword) {
      case 'required':
        out.add(`${at} is missing the required property "${String(p.missingProperty)}"`);
        break;
      case 'additionalProperties':
        out.add(`${at} has an unexpected property "${String(p.additionalProperty)}"`);
        break;
      case 'type':
        out.add(`${at} must be of type ${String(p.type)}`);
        break;
      case 'enum':
        out.add(`${at} must be one of ${JSON.stringify(p.allowedValues)}`);
        break;
      case 'oneOf':
      case 'anyOf':
        out.add(`${at} must match exactly one of the allowed argument shapes`);
        break;
      default:
        out.add(`${at} ${e.message ?? 'is not valid'}`);
    }
  }
  return [...out];
}
