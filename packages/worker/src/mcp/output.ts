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

/**
 * The output of a result, kept within `budget` bytes of JSON (MAX_STREAM_BYTES, like a command's
 * output or a file read): text blocks are cut, other blocks past the budget (images, audio,
 * embedded resources) are replaced by a line saying what was left out, and a structuredContent
 * that does not fit is dropped; any of it sets `truncated`. Never the whole of an over-long result.
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
  let room = budget - 64;
  if (structured && bytesOf(structured) <= room / 2) {
    out.structuredContent = structured;
    room -= bytesOf(structured);
  }
  for (const block of content) {
    const kept = fitBlock(block, room);
    out.content.push(kept);
    room -= bytesOf(kept);
  }
  return out;
}

/** A content block cut to `room` bytes: a text block keeps its head, another is named and left out. */
function fitBlock(block: unknown, room: number): unknown {
  const size = bytesOf(block);
  if (size <= room) return block;
  const b = (typeof block === 'object' && block !== null ? block : {}) as Record<string, unknown>;
  if (b.type === 'text' && typeof b.text === 'string') {
    const head = Buffer.from(b.text).subarray(0, Math.max(0, room - 128));
    // A character cut in half at the end is left out rather than mangled.
    const text = new TextDecoder('utf-8').decode(head, { stream: true });
    return {
      type: 'text',
      text: `${text}\n[cut: ${size} bytes of JSON, over the ${MAX_STREAM_BYTES}-byte limit of a result]`,
    };
  }
  const mime = typeof b.mimeType === 'string' ? ` ${b.mimeType}` : '';
  return {
    type: 'text',
    text: `[a ${String(b.type ?? 'content')}${mime} block of ${size} bytes was left out: over the limit of a result]`,
  };
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
  return text.length > max ? `${text.slice(0, max)}…` : text;
}
