import { createHash } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import { elicitationAnswerProblem, isMcpToolName, MCP_SERVER_NAME, mcpToolName } from './mcp.js';

/** API.md's rule spelled out again, apart from the code under test: 55 characters, `_`, 8 hex of SHA-256. */
const hashedName = (full: string) =>
  `${full.slice(0, 55)}_${createHash('sha256').update(full, 'utf8').digest('hex').slice(0, 8)}`;

describe('mcpToolName', () => {
  it('names a tool mcp__<server>__<tool>', () => {
    expect(mcpToolName('everything', 'echo')).toBe('mcp__everything__echo');
    expect(mcpToolName('fs', 'read_text_file')).toBe('mcp__fs__read_text_file');
  });

  it('keeps letters, digits, _ and - of the tool name', () => {
    expect(mcpToolName('s', 'Get-Sum_2')).toBe('mcp__s__Get-Sum_2');
  });

  it('makes each character outside [A-Za-z0-9_-] an _', () => {
    expect(mcpToolName('s', 'files.read')).toBe('mcp__s__files_read');
    expect(mcpToolName('s', 'a b/c:d@e')).toBe('mcp__s__a_b_c_d_e');
    expect(mcpToolName('s', 'héllo')).toBe('mcp__s__h_llo');
  });

  it('makes a character outside the Basic Multilingual Plane one _, not two', () => {
    expect(mcpToolName('s', 'go🚀now')).toBe('mcp__s__go_now');
  });

  it('keeps a name of exactly 64 characters whole', () => {
    const tool = 't'.repeat(64 - 'mcp__s__'.length);
    const name = mcpToolName('s', tool);
    expect(name).toBe(`mcp__s__${tool}`);
    expect(name).toHaveLength(64);
  });

  it('gives a name of 65 characters its first 55, _ and 8 hex digits of the SHA-256 of the whole', () => {
    const tool = 't'.repeat(65 - 'mcp__s__'.length);
    const name = mcpToolName('s', tool);
    expect(name).toHaveLength(64);
    expect(name).toBe(hashedName(`mcp__s__${tool}`));
    expect(name).toMatch(/^mcp__s__t{47}_[0-9a-f]{8}$/);
  });

  it('hashes the 32-character server long_named_everything_server_032 with trigger-long-running-operation', () => {
    const server = 'long_named_everything_server_032';
    expect(server).toHaveLength(32);
    const full = `mcp__${server}__trigger-long-running-operation`;
    expect(full.length).toBeGreaterThan(64);
    const name = mcpToolName(server, 'trigger-long-running-operation');
    expect(name).toHaveLength(64);
    expect(name).toBe(hashedName(full));
    expect(name.startsWith('mcp__long_named_everything_server_032__trigger-long-')).toBe(true);
  });

  it('hashes the name after substitution, not the tool name as the server gave it', () => {
    const tool = `${'x'.repeat(50)}.with.dots`;
    const substituted = `mcp__srv__${'x'.repeat(50)}_with_dots`;
    expect(mcpToolName('srv', tool)).toBe(hashedName(substituted));
  });

  it('tells apart two long names that share their first 55 characters', () => {
    const head = 'a'.repeat(60);
    expect(mcpToolName('s', `${head}1`)).not.toBe(mcpToolName('s', `${head}2`));
  });

  it('gives names isMcpToolName recognises', () => {
    expect(isMcpToolName(mcpToolName('s', 'x'))).toBe(true);
    expect(isMcpToolName('read_files')).toBe(false);
  });
});

describe('MCP_SERVER_NAME', () => {
  it('takes 1 to 32 letters, digits, _ and -', () => {
    expect(MCP_SERVER_NAME.test('a')).toBe(true);
    expect(MCP_SERVER_NAME.test('long_named_everything_server_032')).toBe(true);
    expect(MCP_SERVER_NAME.test('a'.repeat(33))).toBe(false);
    expect(MCP_SERVER_NAME.test('')).toBe(false);
    expect(MCP_SERVER_NAME.test('my server')).toBe(false);
  });
});

describe('elicitationAnswerProblem', () => {
  it.each([
    [{ action: 'accept', content: { name: 'Ada', age: 36 } }],
    [{ action: 'accept', content: {} }],
    [{ action: 'accept' }],
    [{ action: 'decline' }],
    [{ action: 'cancel' }],
  ])('accepts %j', (output) => {
    expect(elicitationAnswerProblem(output)).toBeUndefined();
  });

  it.each([['accept'], [null], [undefined], [['accept']], [42]])('refuses %j as not an object', (output) => {
    expect(elicitationAnswerProblem(output)).toMatch(/answered with \{"output": \{"action"/);
  });

  it.each([[{}], [{ action: 'ok' }], [{ action: 'ACCEPT' }], [{ action: 1 }]])(
    'refuses %j for want of a known action, quoting what it got',
    (output) => {
      const problem = elicitationAnswerProblem(output);
      expect(problem).toMatch(/needs "action": "accept", "decline" or "cancel"/);
      expect(problem).toContain(`not ${JSON.stringify((output as { action?: unknown }).action)}`);
    },
  );

  it.each([[null], ['Ada'], [['Ada']], [3]])('refuses content %j that is not an object', (content) => {
    expect(elicitationAnswerProblem({ action: 'accept', content })).toMatch(/"content" must be an object/);
  });

  it.each(['decline', 'cancel'])('refuses content with "action": %s', (action) => {
    expect(elicitationAnswerProblem({ action, content: { a: 1 } })).toMatch(/"content" goes with "action": "accept"/);
  });
});
