import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { resolveConfig } from '@tool-dispatch/shared';
import { afterEach, describe, expect, it } from 'vitest';
import { until } from '../../../../../test/support/until.js';
import { createEngine } from '../../app/embedded.js';
import type { Engine } from '../../engine.js';
import type { Principal } from '../tokens.js';
import { type InboxEvent, InboxStreams, readWorkspaceFile } from './inbox-streams.js';

const approverOf = (tenant: string): Principal => ({ name: `approver-${tenant}`, tenant, role: 'approver' });
const OPERATOR: Principal = { name: 'ops', tenant: '*', role: 'operator' };

let engine: Engine | undefined;
afterEach(async () => {
  await engine?.close();
  engine = undefined;
});

/** An embedded engine (memory seams, handlers in this process) with sessions `a` (tenant ta) and `b` (tb). */
async function twoTenants(): Promise<Engine> {
  const workspaceRoot = mkdtempSync(path.join(tmpdir(), 'td-inbox-streams-'));
  const e = await createEngine({ config: resolveConfig({ workspaceRoot }, {}) });
  await e.putSession('a', { provider: 'mcp', tenant: 'ta' });
  await e.putSession('b', { provider: 'mcp', tenant: 'tb' });
  engine = e;
  return e;
}

const waitOn = (e: Engine, session: string, command: string, id = 'c1') =>
  e.submitRound({ session, run: 'r1', calls: [{ id, name: 'run_command', args: { command } }] });

describe('InboxStreams', () => {
  it('opens a page with what its tenant has waiting, oldest first, and never another tenant’s', async () => {
    const e = await twoTenants();
    const first = waitOn(e, 'a', 'echo first', 'c1');
    await new Promise((r) => setTimeout(r, 20));
    const other = waitOn(e, 'b', 'echo other');
    const second = waitOn(e, 'a', 'echo second', 'c2');
    const streams = new InboxStreams(e);
    for (let i = 0; i < 100 && (await e.inboxItems('a')).length < 2; i++) await new Promise((r) => setTimeout(r, 10));
    const ta = await streams.snapshot(approverOf('ta'));
    expect(ta.map((v) => [v.session, v.callId, v.display])).toEqual([
      ['a', 'c1', { kind: 'shell', command: 'echo first' }],
      ['a', 'c2', { kind: 'shell', command: 'echo second' }],
    ]);
    expect((await streams.snapshot(OPERATOR)).map((v) => v.session).sort()).toEqual(['a', 'a', 'b']);
    for (const [session, c] of [
      ['a', 'c1'],
      ['a', 'c2'],
      ['b', 'c1'],
    ] as const)
      await e.answerConfirmation(session, c, { approve: false, remember: false });
    await Promise.all([first, other, second]);
    streams.close();
  });

  it('hands a page the items asked after it opened and their going, for its tenant only', async () => {
    const e = await twoTenants();
    const streams = new InboxStreams(e);
    const ta: InboxEvent[] = [];
    const ops: InboxEvent[] = [];
    const closeTa = await streams.open({ principal: approverOf('ta'), send: (ev) => ta.push(ev) });
    await streams.open({ principal: OPERATOR, send: (ev) => ops.push(ev) });
    const rounds = [waitOn(e, 'b', 'echo other'), waitOn(e, 'a', 'echo mine')];
    await until(() => ops.filter((ev) => ev.name === 'asked').length === 2, {
      what: "ops.filter((ev) => ev.name === 'asked').length === 2",
    });
    await e.answerConfirmation('a', 'c1', { approve: false, remember: false });
    await e.answerConfirmation('b', 'c1', { approve: false, remember: false });
    await Promise.all(rounds);
    await until(() => ops.filter((ev) => ev.name === 'gone').length >= 2, {
      what: "ops.filter((ev) => ev.name === 'gone').length >= 2",
    });
    expect(ta[0]).toMatchObject({ name: 'snapshot', data: { items: [], who: approverOf('ta') } });
    expect(ta.slice(1).every((ev) => ev.name === 'snapshot' || ev.data.session === 'a')).toBe(true);
    expect(ta.map((ev) => ev.name)).toEqual(['snapshot', 'asked', 'gone', 'gone']);
    closeTa();
    const before = ta.length;
    const later = waitOn(e, 'a', 'echo later', 'c9');
    await until(() => ops.filter((ev) => ev.name === 'asked').length === 3, {
      what: "ops.filter((ev) => ev.name === 'asked').length === 3",
    });
    expect(ta.length).toBe(before);
    await e.answerConfirmation('a', 'c9', { approve: false, remember: false });
    await later;
    streams.close();
  });
});

describe('readWorkspaceFile', () => {
  it('reads a file inside the workspace, says when it is missing, and refuses a path that leaves it', async () => {
    const root = mkdtempSync(path.join(tmpdir(), 'td-inbox-read-'));
    writeFileSync(path.join(root, 'a.txt'), 'hello\n');
    expect(await readWorkspaceFile(root, 'a.txt')).toEqual({ kind: 'text', text: 'hello\n' });
    expect(await readWorkspaceFile(root, 'none.txt')).toEqual({ kind: 'missing' });
    expect(await readWorkspaceFile(root, '../x.txt')).toEqual({
      kind: 'unreadable',
      reason: 'the path leaves the workspace',
    });
  });
});
