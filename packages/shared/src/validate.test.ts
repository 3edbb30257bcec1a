import { describe, expect, it } from 'vitest';
import { validateAgainst } from './validate.js';

const schema = () => ({
  type: 'object',
  properties: { n: { type: 'integer' } },
  required: ['n'],
  additionalProperties: false,
});

describe('validateAgainst', () => {
  it('validates with the schema given, call after call on the same object', () => {
    const s = schema();
    expect(validateAgainst(s, { n: 1 })).toEqual({ valid: true });
    expect(validateAgainst(s, { n: 'x' })).toEqual({ valid: false, problems: ['args.n must be of type integer'] });
    expect(validateAgainst(s, {})).toEqual({
      valid: false,
      problems: ['args is missing the required property "n"'],
    });
    expect(validateAgainst(s, { n: 2 })).toEqual({ valid: true });
  });

  it('keeps two different schemas apart', () => {
    const strings = { type: 'object', properties: { n: { type: 'string' } }, required: ['n'] };
    expect(validateAgainst(schema(), { n: 1 }).valid).toBe(true);
    expect(validateAgainst(strings, { n: 1 }).valid).toBe(false);
    expect(validateAgainst(strings, { n: '1' }).valid).toBe(true);
    expect(validateAgainst(schema(), { n: '1' }).valid).toBe(false);
  });

  it('answers a schema that does not compile as a problem, every time', () => {
    const broken = { type: 'object', properties: { n: { type: 'no-such-type' } } };
    for (let i = 0; i < 2; i++) {
      const v = validateAgainst(broken, { n: 1 });
      expect(v.valid).toBe(false);
      expect(v.valid === false && v.problems[0]).toMatch(/^the tool's schema does not compile: /);
    }
  });
});
