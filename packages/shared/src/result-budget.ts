/**
 * The result budget (API.md v1.2 "What the model sees"): how many characters of a call's output a
 * model receives, and what replaces an output over it. Shared by the worker (which writes the
 * whole output to an artifact where the output is produced) and the coordinator (which cuts the
 * largest outputs of a round over the round's budget).
 */
import { isMcpToolName } from './mcp.js';

/** A session's budget in characters: of one call's output, and of a round's outputs together. */
export interface ResultBudget {
  call?: number;
  round?: number;
}

/**
 * A job's budget: the session's, and (with a round budget) the length past which the worker
 * writes an output's artifact in case the round cuts it (`standbyThreshold`).
 */
export interface JobBudget extends ResultBudget {
  standbyOver?: number;
}

/** Where the whole of an output over the budget is written, in the call's workspace. */
export interface Artifact {
  /** Relative to the session workspace (under RESULTS_DIR), as read_files takes it. */
  path: string;
  bytes: number;
}

/** What a model gets in place of an output over the budget (its status stays `ok`). */
export interface TruncatedOutput {
  truncated: true;
  preview: string;
  artifact: Artifact;
  message: string;
}

/** The folder of artifacts in a session workspace. */
export const RESULTS_DIR = '.tool-results';
/** Smallest budget a session may set: the replacement (path, message, a preview) has to fit. */
export const MIN_RESULT_BUDGET = 1000;
/** Largest budget a session may set (a model's whole context is smaller). */
export const MAX_RESULT_BUDGET = 10_000_000;
/** API.md: sessions of provider `mcp` default to these when neither the session nor the deployment sets one. */
export const MCP_PROVIDER_BUDGET: Readonly<Required<ResultBudget>> = { call: 50_000, round: 150_000 };
/**
 * Under a budget, the most a handler reads or writes into an artifact (a file read, a command's
 * output): the model gets a preview and pages through the artifact instead of the 512 KiB cut.
 */
export const MAX_ARTIFACT_BYTES = 64 * 1024 * 1024;
/** With a round budget, an output longer than this has its artifact written in case the round cuts it. */
export const STANDBY_ARTIFACT_MIN_CHARS = MIN_RESULT_BUDGET;

/**
 * Under a round budget of `round` characters over `calls` executed calls, outputs no longer than
 * this are never cut (each cut goes to an even share of the round, at least MIN_RESULT_BUDGET), so
 * the worker writes artifacts only for longer ones.
 */
export function standbyThreshold(round: number, calls: number): number {
  return Math.max(STANDBY_ARTIFACT_MIN_CHARS, Math.floor(round / Math.max(1, calls)));
}

/** Why a budget is not one, or undefined; `what` names it in the message (`resultBudget`, `TD_RESULT_BUDGET_CALL`). */
export function budgetValueProblem(value: unknown, what: string): string | undefined {
  if (typeof value === 'number' && Number.isInteger(value) && value >= MIN_RESULT_BUDGET && value <= MAX_RESULT_BUDGET)
    return undefined;
  return `${what} must be an integer number of characters from ${MIN_RESULT_BUDGET} to ${MAX_RESULT_BUDGET}, got ${JSON.stringify(value)}`;
}

/**
 * A session's budget: what it set, else the deployment's defaults (TD_RESULT_BUDGET_CALL and
 * _ROUND), else its provider's (`mcp`); undefined when none applies (outputs go as they are).
 */
export function effectiveBudget(
  given: ResultBudget | undefined,
  defaults: ResultBudget,
  provider: string,
): ResultBudget | undefined {
  const byProvider: ResultBudget = provider === 'mcp' ? MCP_PROVIDER_BUDGET : {};
  const call = given?.call ?? defaults.call ?? byProvider.call;
  const round = given?.round ?? defaults.round ?? byProvider.round;
  if (call === undefined && round === undefined) return undefined;
  return { ...(call !== undefined ? { call } : {}), ...(round !== undefined ? { round } : {}) };
}

/** An MCP result's text blocks, or undefined when the output is not an MCP result. */
function mcpText(name: string, output: unknown): string | undefined {
  if (!isMcpToolName(name) || !output || typeof output !== 'object') return undefined;
  const content = (output as { content?: unknown }).content;
  if (!Array.isArray(content)) return undefined;
  return content
    .filter((b): b is { type: 'text'; text: string } => b?.type === 'text' && typeof b.text === 'string')
    .map((b) => b.text)
    .join('\n');
}

/** The characters of an output the budget counts: its JSON (an MCP result: its text content). */
export function budgetedLength(name: string, output: unknown): number {
  return mcpText(name, output)?.length ?? JSON.stringify(output ?? null).length;
}

/**
 * The whole output as the artifact holds it, text with line breaks: an MCP result's text, a
 * read of one file its content, and any other output its JSON pretty-printed.
 */
export function artifactText(name: string, output: unknown): string {
  const text = mcpText(name, output);
  if (text !== undefined) return text;
  const files = name === 'read_files' ? (output as { files?: unknown })?.files : undefined;
  if (Array.isArray(files) && files.length === 1 && typeof files[0]?.content === 'string') return files[0].content;
  return `${JSON.stringify(output ?? null, null, 2)}\n`;
}

/** The artifact's path for a call: one file per call of a round. */
export function artifactPath(job: { name: string; round: string; callIndex: number }): string {
  const safe = (s: string) => s.replace(/[^A-Za-z0-9_.-]/g, '_');
  return `${RESULTS_DIR}/${safe(job.round)}-${job.callIndex}-${safe(job.name)}.txt`;
}

/**
 * The first part of `text` whose JSON string takes at most `room` characters, cut after a line
 * break when one falls in its second half, else at a character (never inside a surrogate pair).
 */
export function previewOf(text: string, room: number): string {
  if (room <= 0) return '';
  const fits = (n: number) => JSON.stringify(text.slice(0, n)).length - 2 <= room;
  let lo = 0;
  let hi = Math.min(text.length, room);
  while (lo < hi) {
    const mid = Math.ceil((lo + hi) / 2);
    if (fits(mid)) lo = mid;
    else hi = mid - 1;
  }
  let end = lo;
  if (end < text.length) {
    const nl = text.lastIndexOf('\n', end - 1);
    if (nl >= 0 && nl + 1 >= end / 2) end = nl + 1;
  }
  const last = text.charCodeAt(end - 1);
  if (end > 0 && last >= 0xd800 && last <= 0xdbff) end -= 1;
  return text.slice(0, end);
}

/** Lines of a text as read_files counts them (a last line without a line break counts). */
export function lineCount(text: string): number {
  if (text.length === 0) return 0;
  let n = 0;
  for (let i = text.indexOf('\n'); i !== -1; i = text.indexOf('\n', i + 1)) n += 1;
  return text.endsWith('\n') ? n : n + 1;
}

/**
 * What replaces an output of `length` characters whose whole text (`text`) is in `artifact`: a
 * preview as long as `budget` leaves room for, and a message saying how to page through the
 * artifact with read_files (a page size that fits the budget). Its JSON fits in `budget`.
 */
export function truncatedOutput(input: {
  text: string;
  length: number;
  artifact: Artifact;
  budget: number;
  why: 'call' | 'round';
}): TruncatedOutput {
  const { text, artifact, budget } = input;
  const lines = lineCount(text);
  const perLine = Math.max(1, Math.ceil(text.length / Math.max(1, lines)));
  const pageLines = Math.max(1, Math.floor((budget * 0.6) / perLine));
  const over =
    input.why === 'call'
      ? `over this session's result budget of ${budget} characters per call`
      : "cut to fit this round's result budget";
  const message =
    `The output (${input.length} characters) was ${over}: preview holds its first part, and the whole of it ` +
    `(${artifact.bytes} bytes, ${lines} lines) is in the workspace file ${artifact.path}. Read it a page at a time ` +
    `with read_files({"paths": ["${artifact.path}"], "offset": <first line, from 1>, "limit": ${pageLines}}).`;
  const shell: TruncatedOutput = { truncated: true, preview: '', artifact, message };
  const room = budget - JSON.stringify(shell).length;
  return { ...shell, preview: previewOf(text, room) };
}

/** Whether an output is a replacement already (a round does not cut it again). */
export function isTruncatedOutput(output: unknown): output is TruncatedOutput {
  return (
    !!output &&
    typeof output === 'object' &&
    (output as { truncated?: unknown }).truncated === true &&
    typeof (output as { artifact?: unknown }).artifact === 'object'
  );
}
