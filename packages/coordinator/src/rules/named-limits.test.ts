import { ConfigError } from '@tool-dispatch/shared';
import { describe, expect, it } from 'vitest';
import { DEFAULT_MAX_WAIT_MS, namedStages, parseNamedLimits, retryAfterOf } from './named-limits.js';

const parse = (o: unknown) => parseNamedLimits(JSON.stringify(o), 'limits.json');

describe('TD_LIMITS', () => {
  it('resolves a call to its tool (globs included), server and tenant limits, in that order', () => {
    const limits = parse({
      tools: { http_request: { concurrency: 2 }, 'mcp__gh__*': { concurrency: 3 } },
      servers: { gh: { concurrency: 4 } },
      tenants: { '*': { concurrency: 5 }, acme: { concurrency: 1 } },
    });
    expect(limits.maxWaitMs).toBe(DEFAULT_MAX_WAIT_MS);
    const stages = namedStages(limits, { tool: 'mcp__gh__create_issue', server: 'gh', tenant: 'other' });
    expect(stages.map((s) => [s.name, s.concurrency])).toEqual([
      ['tool:mcp__gh__*', 3],
      ['server:gh', 4],
      ['tenant:other', 5],
    ]);
    // Each limit is its own scope; a tenant's own entry wins over `*`.
    expect(stages[0]?.scope).toEqual({ limit: 'tool:mcp__gh__*' });
    expect(namedStages(limits, { tool: 'http_request', tenant: 'acme' }).map((s) => s.name)).toEqual([
      'tool:http_request',
      'tenant:acme',
    ]);
    expect(namedStages(limits, { tool: 'mcp__ghx__a', tenant: 'acme' }).map((s) => s.name)).toEqual(['tenant:acme']);
    expect(namedStages(undefined, { tool: 'http_request', tenant: 'acme' })).toEqual([]);
  });

  it('treats only * as special in a tool pattern', () => {
    const limits = parse({ tools: { 'a.b': { concurrency: 1 } } });
    expect(namedStages(limits, { tool: 'axb', tenant: 't' })).toEqual([]);
    expect(namedStages(limits, { tool: 'a.b', tenant: 't' })).toHaveLength(1);
  });

  it.each([
    ['malformed JSON', '{"tools": ', /not valid JSON/],
    ['a top level that is not an object', '[]', /must be a JSON object/],
    ['an unknown key', '{"tool": {}}', /unknown key "tool"/],
    ['a concurrency "two"', '{"tools": {"x": {"concurrency": "two"}}}', /tools\["x"\]: concurrency must be an integer/],
    ['a concurrency of 0', '{"servers": {"s": {"concurrency": 0}}}', /servers\["s"\]: concurrency/],
    ['a rate "5/x"', '{"tools": {"x": {"rate": "5/x"}}}', /rate must be "<n>\/s"/],
    ['a limit with neither', '{"tenants": {"*": {}}}', /needs concurrency or rate/],
    ['a negative maxWaitMs', '{"maxWaitMs": -5}', /maxWaitMs must be an integer/],
    ['an unknown limit key', '{"tools": {"x": {"concurency": 2}}}', /unknown key "concurency"/],
  ])('refuses %s with a ConfigError naming the problem', (_what, text, message) => {
    expect(() => parseNamedLimits(text, 'limits.json')).toThrow(ConfigError);
    expect(() => parseNamedLimits(text, 'limits.json')).toThrow(message);
  });
});

describe('retryAfterOf', () => {
  const rate = { concurrency: 1_000_000, rate: { count: 10, windowMs: 1000 } };
  const two = { concurrency: 2 };

  it('gives a rate limit the time until its next token', () => {
    expect(retryAfterOf([rate], [{ held: 3, nextTokenMs: 420 }], 5000)).toBe(420);
  });

  it('gives a full concurrency limit its mean hold time over its places', () => {
    expect(retryAfterOf([two], [{ held: 2, nextTokenMs: 0, meanHoldMs: 3000 }], 200)).toBe(1500);
  });

  it('gives a full concurrency limit no call held to the end yet the time the call waited', () => {
    expect(retryAfterOf([two], [{ held: 2, nextTokenMs: 0 }], 750)).toBe(750);
  });

  it('takes the largest of the stages', () => {
    const states = [
      { held: 2, nextTokenMs: 0, meanHoldMs: 1000 },
      { held: 1, nextTokenMs: 900 },
    ];
    expect(retryAfterOf([two, rate], states, 100)).toBe(900);
  });

  it('is at least 1 ms when the limits have room again', () => {
    expect(
      retryAfterOf(
        [two, rate],
        [
          { held: 1, nextTokenMs: 0, meanHoldMs: 500 },
          { held: 0, nextTokenMs: 0 },
        ],
        0,
      ),
    ).toBe(1);
  });

  it('gives a stage it could not read the time the call waited', () => {
    expect(retryAfterOf([two], [], 750)).toBe(750);
  });
});
