import { describe, expect, it } from 'vitest';
import { makeContext } from '../../testing/workspace.js';
import { calculate } from './calculate.js';

const calc = (expression: string) => calculate({ expression }, makeContext('/nonexistent'));

describe('calculate', () => {
  it.each([
    ['(2+3)*4', 20],
    ['sqrt(16) + 2^10', 1028],
    ['10 % 3', 1],
    ['5!', 120],
    ['2 pi', 2 * Math.PI],
    ['-(3) + +4', 1],
    ['max(1, 7, 3) / 2', 3.5],
    ['round(10 / 3, 2)', 3.33],
    ['1e3 * 1.5', 1500],
    ['2^3^2', 512],
    ['-2^2', -4],
    ['2 ** 10', 1024],
    ['log(8, 2) + ln(e)', 4],
    ['gamma(5)', 24],
    ['.5 + 3(2)', 6.5],
  ])('evaluates %s', async (expression, value) => {
    await expect(calc(expression)).resolves.toEqual({ value });
  });

  describe('when the expression reaches beyond arithmetic', () => {
    it.each([
      ['import({}, {})', /function "import" is not supported/],
      ['evaluate("1+1")', /function "evaluate" is not supported/],
      ['parse("1")', /function "parse" is not supported/],
      ['createUnit("foo")', /function "createUnit" is not supported/],
      ['a = 1', /assignment is not supported/],
      ['f(x) = x; f(2)', /not supported/],
      ['zeros(100000, 100000)', /function "zeros" is not supported/],
      ['[1, 2, 3]', /a matrix is not supported/],
      ['1:1000000000', /a range is not supported/],
      ['x + 1', /unknown name "x"/],
      ['5 cm', /unknown name "cm"/],
      ['"text"', /is not a number/],
      ['cos.constructor', /not supported/],
      ['2 > 1', /not supported/],
    ])('refuses %s', async (expression, message) => {
      await expect(calc(expression)).rejects.toMatchObject({ code: 'handler_error', message });
    });
  });

  it('refuses an expression nested deeper than the limit, without overflowing the stack', async () => {
    await expect(calc(`${'('.repeat(5000)}1${')'.repeat(5000)}`)).rejects.toMatchObject({ message: /nested deeper/ });
  });

  it('refuses a result that is not finite', async () => {
    await expect(calc('1/0')).rejects.toMatchObject({ code: 'handler_error', message: /Infinity, not a finite/ });
    await expect(calc('10^400')).rejects.toMatchObject({ message: /not a finite number/ });
  });

  it('refuses a complex result', async () => {
    await expect(calc('sqrt(-1)')).rejects.toMatchObject({ code: 'handler_error', message: /not a number/ });
  });

  it('says what is wrong with an expression that does not parse', async () => {
    await expect(calc('2 +* 3')).rejects.toMatchObject({ code: 'handler_error', message: /cannot parse/ });
  });
});
