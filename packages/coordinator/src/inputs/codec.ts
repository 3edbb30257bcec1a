import { tryParseJson } from '@tool-dispatch/shared/redis';
import type { InputSettlement, ParkedInput } from '../model.js';

const isRecord = (v: unknown): v is Record<string, unknown> => typeof v === 'object' && v !== null && !Array.isArray(v);

/** A stored parked call read back, or undefined when the JSON is not one (never ours: skipped). */
export function decodeParkedInput(json: string | null | undefined): ParkedInput | undefined {
  const v = tryParseJson(json ?? undefined);
  if (!isRecord(v)) return undefined;
  const strings = ['inputId', 'session', 'round', 'run', 'callId', 'name'] as const;
  if (!strings.every((k) => typeof v[k] === 'string')) return undefined;
  if (v.kind !== 'interactive' && v.kind !== 'client' && v.kind !== 'elicitation') return undefined;
  if (!isRecord(v.args)) return undefined;
  if (![v.callIndex, v.createdAt, v.deadline].every((n) => typeof n === 'number')) return undefined;
  return v as unknown as ParkedInput;
}

/** A stored settlement read back; undefined when the JSON is not one. */
export function decodeSettlement(json: string | null | undefined): InputSettlement | undefined {
  const v = tryParseJson(json ?? undefined);
  if (!isRecord(v)) return undefined;
  switch (v.by) {
    case 'timeout':
    case 'cancelled':
    case 'stopped':
      return { by: v.by };
    case 'answer': {
      const a = v.answer;
      if (isRecord(a) && typeof a.error === 'string') return { by: 'answer', answer: { error: a.error } };
      if (isRecord(a) && 'output' in a) return { by: 'answer', answer: { output: a.output } };
      return undefined;
    }
    default:
      return undefined;
  }
}
