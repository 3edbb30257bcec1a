import { describe, expect, it } from 'vitest';
import type { InboxItem } from '../../model.js';
import { answerFormOf, argsDisplay, byAge, editedText, editTarget, inboxView } from './inbox-display.js';

const item = (over: Partial<InboxItem>): InboxItem => ({
  id: 'cf_1',
  type: 'confirmation',
  session: 's1',
  round: 'rnd_1',
  run: 'r1',
  callId: 'c1',
  name: 'calculate',
  args: {},
  createdAt: 1,
  order: 0,
  deadline: 2,
  ...over,
});

describe('argsDisplay', () => {
  it('shows a run_command as its command in a shell block, the other args as JSON beside it', () => {
    expect(argsDisplay('run_command', { command: 'rm -rf build && make' })).toEqual({
      kind: 'shell',
      command: 'rm -rf build && make',
    });
    expect(argsDisplay('run_command', { command: 'sleep 5', timeoutMs: 9000 })).toEqual({
      kind: 'shell',
      command: 'sleep 5',
      rest: '{\n  "timeoutMs": 9000\n}',
    });
  });

  it('pretty-prints any other tool’s args as JSON', () => {
    expect(argsDisplay('http_request', { url: 'https://x.test', method: 'POST' })).toEqual({
      kind: 'json',
      text: '{\n  "url": "https://x.test",\n  "method": "POST"\n}',
    });
  });

  it('shows an edit_file of whole content as a diff of the workspace file against it', () => {
    const shown = argsDisplay(
      'edit_file',
      { path: 'a.txt', content: 'one\nTWO\nthree\n' },
      {
        kind: 'text',
        text: 'one\ntwo\nthree\n',
      },
    );
    expect(shown).toEqual({
      kind: 'diff',
      path: 'a.txt',
      lines: [
        { op: 'same', text: 'one' },
        { op: 'del', text: 'two' },
        { op: 'add', text: 'TWO' },
        { op: 'same', text: 'three' },
      ],
    });
  });

  it('shows an old/new edit_file as the whole file’s diff once the text occurs exactly once', () => {
    const shown = argsDisplay(
      'edit_file',
      { path: 'a.txt', old: 'two', new: '2' },
      { kind: 'text', text: 'one\ntwo\n' },
    );
    expect(shown).toMatchObject({
      kind: 'diff',
      lines: [{ op: 'same', text: 'one' }, { op: 'del' }, { op: 'add', text: '2' }],
    });
  });

  it('says a missing file is a new one, and falls back to old against new when the file cannot be used', () => {
    expect(argsDisplay('edit_file', { path: 'n.txt', content: 'x\n' }, { kind: 'missing' })).toEqual({
      kind: 'diff',
      path: 'n.txt',
      lines: [{ op: 'add', text: 'x' }],
      note: 'a new file',
    });
    const unreadable = argsDisplay(
      'edit_file',
      { path: 'a', old: 'p', new: 'q' },
      { kind: 'unreadable', reason: 'EACCES' },
    );
    expect(unreadable).toMatchObject({
      kind: 'diff',
      note: expect.stringMatching(/could not be read here \(EACCES\): old against new/),
    });
    const twice = argsDisplay('edit_file', { path: 'a', old: 'p', new: 'q' }, { kind: 'text', text: 'p p' });
    expect(twice).toMatchObject({ note: expect.stringMatching(/not occur exactly once/) });
  });
});

describe('editedText', () => {
  it('replaces exactly one occurrence, and gives up on none or several', () => {
    expect(editedText({ old: 'b', new: 'B' }, 'abc')).toBe('aBc');
    expect(editedText({ old: 'z', new: 'B' }, 'abc')).toBeUndefined();
    expect(editedText({ old: 'b', new: 'B' }, 'bb')).toBeUndefined();
    expect(editedText({ content: 'new' }, 'old')).toBe('new');
  });

  it('names the path of an edit_file only', () => {
    expect(editTarget({ name: 'edit_file', args: { path: 'x' } })).toBe('x');
    expect(editTarget({ name: 'run_command', args: { path: 'x' } })).toBeUndefined();
  });
});

describe('answerFormOf', () => {
  it('answers a confirmation by approve/deny, an ask_user by its choices or by text', () => {
    expect(answerFormOf(item({}))).toEqual({ kind: 'confirm' });
    const ask = { type: 'input' as const, kind: 'interactive' as const, name: 'ask_user' };
    expect(answerFormOf(item({ ...ask, args: { question: 'Which?', choices: ['a', 'b'] } }))).toEqual({
      kind: 'choices',
      question: 'Which?',
      choices: ['a', 'b'],
    });
    expect(answerFormOf(item({ ...ask, args: { question: 'Why?' } }))).toEqual({ kind: 'text', question: 'Why?' });
  });

  it('answers an elicitation with a form from its requested schema, a client tool with JSON', () => {
    const schema = { type: 'object', properties: { name: { type: 'string' } } };
    expect(
      answerFormOf(item({ type: 'input', kind: 'elicitation', args: { message: 'Name?', requestedSchema: schema } })),
    ).toEqual({ kind: 'elicitation', message: 'Name?', schema });
    expect(answerFormOf(item({ type: 'input', kind: 'client', name: 'lookup' }))).toEqual({ kind: 'json' });
  });
});

describe('inboxView and byAge', () => {
  it('adds the tenant, the display and the form, and sorts oldest first', () => {
    const view = inboxView(item({ name: 'run_command', args: { command: 'ls' } }), 'acme');
    expect(view).toMatchObject({ tenant: 'acme', display: { kind: 'shell' }, form: { kind: 'confirm' } });
    const older = item({ id: 'b', createdAt: 1 });
    const newer = item({ id: 'a', createdAt: 5 });
    expect([newer, older].sort(byAge).map((i) => i.id)).toEqual(['b', 'a']);
  });
});

describe('byAge within a round', () => {
  it('lists the items of one round asked at once in call order, whatever their ids', () => {
    const second = item({ id: 'a', order: 1 });
    const first = item({ id: 'z', order: 0 });
    expect([second, first].sort(byAge).map((i) => i.id)).toEqual(['z', 'a']);
  });
});
