import type { HistoryEntry } from '../../model.js';

/** A line of a run's recent history, for context beside a waiting call. */
export interface ContextLine {
  at: string;
  round: string;
  callId: string;
  name: string;
  status: string;
  /** The output or the error, cut to SUMMARY_CHARS. */
  summary: string;
}

/** Recent results shown. */
export const CONTEXT_LINES = 12;
/** Characters of each result shown. */
export const SUMMARY_CHARS = 240;

function cut(text: string): string {
  return text.length > SUMMARY_CHARS ? `${text.slice(0, SUMMARY_CHARS - 1)}…` : text;
}

/** The last CONTEXT_LINES results of `run` in a session's history (oldest first), each summarised. */
export function runContext(history: readonly HistoryEntry[], run: string, limit = CONTEXT_LINES): ContextLine[] {
  return history
    .filter((e) => e.run === run)
    .slice(-limit)
    .map((e) => ({
      at: e.at,
      round: e.round,
      callId: e.id,
      name: e.name,
      status: e.error ? `${e.status} (${e.error.code})` : e.status,
      summary: cut(e.error ? e.error.message : (JSON.stringify(e.output) ?? '')),
    }));
}
