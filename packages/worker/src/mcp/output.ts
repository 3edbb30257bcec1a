import { MAX_STREAM_BYTES } from '@tool-dispatch/shared';

/** An MCP `tools/call` result as far as the dispatcher reads it. */
export interface McpCallResult {
  content?: unknown;
  structuredContent?: unknown;
  isError?: boolean;
}

/** An `ok` MCP call's output (API.md): `{content, structuredContent?}`, plus `truncated` when it was cut. */
export interface McpOutput {
  content: unknown[];
  structuredContent?: Record<string, unknown>;
  truncated?: true;
}

const bytesOf = (v: unknown) => Buffer.byteLength(JSON.stringify(v) ?? '');
/** Room kept back for the last line saying how many blocks were left out. */
const LEFT_OUT_NOTE_BYTES = 160;
/** Longest `type` or `mimeType` of a server's block quoted in the line that replaces it. */
const QUOTED_CHARS = 64;

/**
 * The output of a result, kept within `budget` bytes of JSON (MAX_STREAM_BYTES, like a command's
 * output or a file read): text blocks are cut, other blocks past the budget (images, audio,
 * embedded resources) are replaced by a line saying what was left out, blocks past even that are
 * counted in a last line, and a structuredContent that does not fit is dropped; any of it sets
 * `truncated`. Never the whole of an over-long result, never more than `budget`.
 */
export function mcpOutputOf(result: McpCallResult, budget = MAX_STREAM_BYTES): McpOutput {
  const content = Array.isArray(result.content) ? result.content : [];
  const structured =
    typeof result.structuredContent === 'object' &&
    result.structuredContent !== null &&
    !Array.isArray(result.structuredContent)
      ? (result.structuredContent as Record<string, unknown>)
      : undefined;
  const whole: McpOutput = { content, ...(structured ? { structuredContent: structured } : {}) };
  if (bytesOf(whole) <= budget) return whole;
  const out: McpOutput = { content: [], truncated: true };
  // Every byte counted: the envelope, the structuredContent key, the commas between blocks.
  let room = budget - bytesOf(out) - LEFT_OUT_NOTE_BYTES;
  if (structured) {
    const size = bytesOf({ structuredContent: structured }) - 1;
    if (size <= room / 2) {
      out.structuredContent = structured;
      room -= size;
    }
  }
  let leftOut = 0;
  for (const block of content) {
    const comma = out.content.length > 0 ? 1 : 0;
    const kept = fitBlock(block, room - comma, budget);
    if (kept === undefined) leftOut += 1;
    else {
      out.content.push(kept);
      room -= bytesOf(kept) + comma;
    }
  }
  if (leftOut > 0)
    out.content.push({
      type: 'text',
      text: `[${leftOut} more content block${leftOut === 1 ? '' : 's'} left out: over the ${budget}-byte limit of a result]`,
    });
  return out;
}

/**
 * A content block within `room` bytes of JSON: whole, a text block's head with a note, or a line
 * naming another block; undefined when not even that fits.
 */
function fitBlock(block: unknown, room: number, budget: number): unknown {
  const size = bytesOf(block);
  if (size <= room) return block;
  const b = (typeof block === 'object' && block !== null ? block : {}) as Record<string, unknown>;
  const line = (text: string) => ({ type: 'text', text });
  if (b.type === 'text' && typeof b.text === 'string') {
    const note = `\n[cut: ${size} bytes of JSON, over the ${budget}-byte limit of a result]`;
    const cut = headWithin(b.text, room - bytesOf(line(note)));
    return cut === undefined ? undefined : line(cut + note);
  }
  const type = String(b.type ?? 'content').slice(0, QUOTED_CHARS);
  const mime = typeof b.mimeType === 'string' ? ` ${b.mimeType.slice(0, QUOTED_CHARS)}` : '';
  const named = line(`[a ${type}${mime} block of ${size} bytes was left out: over the limit of a result]`);
  return bytesOf(named) <= room ? named : undefined;
}

/**
 * The longest head of `text` whose JSON string body is at most `room` bytes. Cut between
 * characters, never inside one (a surrogate pair stays whole).
 */
function headWithin(text: string, room: number): string | undefined {
  if (room < 0) return undefined;
  let used = 0;
  let i = 0;
  while (i < text.length) {
    const width = isSurrogatePair(text, i) ? 2 : 1;
    const cost = width === 2 ? 4 : jsonBytesOfUnit(text.charCodeAt(i));
    if (used + cost > room) break;
    used += cost;
    i += width;
  }
  return text.slice(0, i);
}

function isSurrogatePair(text: string, i: number): boolean {
  const hi = text.charCodeAt(i);
  const lo = text.charCodeAt(i + 1);
  return hi >= 0xd800 && hi <= 0xdbff && lo >= 0xdc00 && lo <= 0xdfff;
}

/** Bytes a UTF-16 code unit (not half of a pair) takes in JSON.stringify's UTF-8 output: escapes and all. */
function jsonBytesOfUnit(c: number): number {
  if (c === 0x22 || c === 0x5c) return 2; // \" \\
  if (c < 0x20) return c === 0x08 || c === 0x09 || c === 0x0a || c === 0x0c || c === 0x0d ? 2 : 6; // \n or \u0001
  if (c < 0x80) return 1;
  if (c < 0x800) return 2;
  if (c >= 0xd800 && c <= 0xdfff) return 6; // a lone surrogate: \udXXX
  return 3;
}

/** The text of a result's text blocks (an `isError` result's message), at most `max` characters. */
export function mcpTextOf(result: McpCallResult, max = 4000): string {
  const content = Array.isArray(result.content) ? result.content : [];
  const text = content
    .map((b) =>
      typeof b === 'object' && b !== null && (b as { type?: unknown }).type === 'text'
        ? String((b as { text?: unknown }).text ?? '')
        : '',
    )
    .filter(Boolean)
    .join('\n');
  if (text.length <= max) return text;
  // A surrogate pair cut in half at the end is left out rather than mangled.
  const head = /[\uD800-\uDBFF]$/.test(text.slice(0, max)) ? text.slice(0, max - 1) : text.slice(0, max);
  return `${head}…`;
}
