import type { InboxItem } from '../../model.js';
import { ASK_USER } from '../../rules/park.js';
import { type DiffLine, lineDiff } from './line-diff.js';

/** How a call's args are shown: pretty JSON, a command as a shell block, an edit as a diff. */
export type ArgsDisplay =
  | { kind: 'json'; text: string }
  | { kind: 'shell'; command: string; rest?: string }
  | { kind: 'diff'; path: string; lines: DiffLine[]; note?: string };

/** What the workspace file an edit names holds now, as the coordinator could read it. */
export type FileNow = { kind: 'text'; text: string } | { kind: 'missing' } | { kind: 'unreadable'; reason: string };

/** How an item is answered on the page. */
export type AnswerForm =
  | { kind: 'confirm' }
  /** ask_user with choices: one button each (an answer outside them would be refused). */
  | { kind: 'choices'; question: string; choices: string[] }
  /** ask_user without choices: free text. */
  | { kind: 'text'; question: string }
  /** An MCP server's question: a form from its `requestedSchema`; accept, decline or cancel. */
  | { kind: 'elicitation'; message: string; schema: Record<string, unknown> }
  /** A client tool's (or another interactive tool's) output as JSON, or an error message. */
  | { kind: 'json'; schema?: Record<string, unknown> };

/** An item as the page gets it. */
export interface InboxView extends InboxItem {
  tenant: string;
  display: ArgsDisplay;
  form: AnswerForm;
}

const pretty = (value: unknown) => JSON.stringify(value, null, 2) ?? 'null';
const isRecord = (v: unknown): v is Record<string, unknown> => typeof v === 'object' && v !== null && !Array.isArray(v);

/** The workspace path an item's args would edit (edit_file), for the caller to read. */
export function editTarget(item: Pick<InboxItem, 'name' | 'args'>): string | undefined {
  return item.name === 'edit_file' && typeof item.args.path === 'string' ? item.args.path : undefined;
}

/** The file's text after an edit: the whole `content`, or `old` replaced by `new` when it occurs exactly once. */
export function editedText(args: Record<string, unknown>, current: string): string | undefined {
  if (typeof args.content === 'string') return args.content;
  if (typeof args.old !== 'string' || typeof args.new !== 'string' || args.old === '') return undefined;
  const at = current.indexOf(args.old);
  if (at < 0 || current.indexOf(args.old, at + 1) >= 0) return undefined;
  return current.slice(0, at) + args.new + current.slice(at + args.old.length);
}

/** edit_file's change as a diff of the workspace file against the new content (or, failing that, of `old` against `new`). */
function editDisplay(args: Record<string, unknown>, path: string, file: FileNow | undefined): ArgsDisplay {
  const current = file?.kind === 'text' ? file.text : file?.kind === 'missing' ? '' : undefined;
  const after = current === undefined ? undefined : editedText(args, current);
  if (current !== undefined && after !== undefined) {
    const note = file?.kind === 'missing' ? 'a new file' : undefined;
    return { kind: 'diff', path, lines: lineDiff(current, after), ...(note ? { note } : {}) };
  }
  const why =
    file?.kind === 'unreadable'
      ? `the workspace file could not be read here (${file.reason})`
      : 'the text to replace does not occur exactly once in the workspace file; the edit will fail as asked';
  if (typeof args.old === 'string' && typeof args.new === 'string')
    return { kind: 'diff', path, lines: lineDiff(args.old, args.new), note: `${why}: old against new` };
  if (typeof args.content === 'string')
    return { kind: 'diff', path, lines: lineDiff('', args.content), note: `${why}: the new content` };
  return { kind: 'json', text: pretty(args) };
}

/** How `name`'s args are shown; `file` is what an edit_file's path holds now. */
export function argsDisplay(name: string, args: Record<string, unknown>, file?: FileNow): ArgsDisplay {
  if (name === 'run_command' && typeof args.command === 'string') {
    const { command, ...rest } = args;
    return { kind: 'shell', command, ...(Object.keys(rest).length > 0 ? { rest: pretty(rest) } : {}) };
  }
  const path = editTarget({ name, args });
  if (path !== undefined) return editDisplay(args, path, file);
  return { kind: 'json', text: pretty(args) };
}

/** How an item is answered: by its type, kind and (ask_user, elicitation) args. */
export function answerFormOf(item: Pick<InboxItem, 'type' | 'kind' | 'name' | 'args'>): AnswerForm {
  if (item.type === 'confirmation') return { kind: 'confirm' };
  const { args } = item;
  if (item.kind === 'elicitation') {
    const schema = isRecord(args.requestedSchema) ? args.requestedSchema : { type: 'object', properties: {} };
    return { kind: 'elicitation', message: typeof args.message === 'string' ? args.message : '', schema };
  }
  if (item.name === ASK_USER) {
    const question = typeof args.question === 'string' ? args.question : '';
    const choices = Array.isArray(args.choices) ? args.choices.filter((c): c is string => typeof c === 'string') : [];
    return choices.length > 0 ? { kind: 'choices', question, choices } : { kind: 'text', question };
  }
  return { kind: 'json' };
}

/** The page's view of an item of `tenant`. */
export function inboxView(item: InboxItem, tenant: string, file?: FileNow): InboxView {
  return { ...item, tenant, display: argsDisplay(item.name, item.args, file), form: answerFormOf(item) };
}

/** Oldest first; a round's items in call order (by id as the last tie-break). */
export function byAge(a: InboxItem, b: InboxItem): number {
  return a.createdAt - b.createdAt || a.round.localeCompare(b.round) || a.order - b.order || a.id.localeCompare(b.id);
}
