import type { HandlerContext } from '@tool-dispatch/shared';
import { ToolError } from '@tool-dispatch/shared';
import { requireString } from '../support/args.js';

// A small recursive-descent evaluator, not a library: mathjs (tried first) takes over 4 s to
// import, which every worker and CLI start would pay. Only scalar arithmetic exists here, so
// every expression is bounded in time and memory by its length; nothing is ever eval'd.

const CONSTANTS: Record<string, number> = {
  pi: Math.PI,
  PI: Math.PI,
  e: Math.E,
  E: Math.E,
  tau: 2 * Math.PI,
  phi: (1 + Math.sqrt(5)) / 2,
  LN2: Math.LN2,
  LN10: Math.LN10,
  LOG2E: Math.LOG2E,
  LOG10E: Math.LOG10E,
  SQRT2: Math.SQRT2,
  SQRT1_2: Math.SQRT1_2,
};

const gcd2 = (a: number, b: number): number => (b === 0 ? Math.abs(a) : gcd2(b, a % b));

function factorial(n: number): number {
  if (!Number.isInteger(n) || n < 0) return Number.NaN;
  if (n > 170) return Number.POSITIVE_INFINITY;
  let r = 1;
  for (let i = 2; i <= n; i++) r *= i;
  return r;
}

/** Lanczos approximation (g = 7). */
function gamma(z: number): number {
  if (Number.isInteger(z) && z > 0) return factorial(z - 1);
  if (z < 0.5) return Math.PI / (Math.sin(Math.PI * z) * gamma(1 - z));
  const c = [
    0.99999999999980993, 676.5203681218851, -1259.1392167224028, 771.32342877765313, -176.61502916214059,
    12.507343278686905, -0.13857109526572012, 9.9843695780195716e-6, 1.5056327351493116e-7,
  ];
  const x = z - 1;
  let a = c[0] as number;
  const t = x + 7.5;
  for (let i = 1; i < 9; i++) a += (c[i] as number) / (x + i);
  return Math.sqrt(2 * Math.PI) * t ** (x + 0.5) * Math.exp(-t) * a;
}

type Fn = (...xs: number[]) => number;
const FUNCTIONS: Record<string, Fn> = {
  abs: Math.abs,
  sqrt: Math.sqrt,
  cbrt: Math.cbrt,
  nthRoot: (x, n = 2) => (x < 0 && n % 2 === 1 ? -((-x) ** (1 / n)) : x ** (1 / n)),
  exp: Math.exp,
  expm1: Math.expm1,
  log: (x, base) => (base === undefined ? Math.log(x) : Math.log(x) / Math.log(base)),
  ln: Math.log,
  log2: Math.log2,
  log10: Math.log10,
  log1p: Math.log1p,
  pow: Math.pow,
  mod: (a, b) => a % b,
  hypot: Math.hypot,
  sin: Math.sin,
  cos: Math.cos,
  tan: Math.tan,
  sec: (x) => 1 / Math.cos(x),
  csc: (x) => 1 / Math.sin(x),
  cot: (x) => 1 / Math.tan(x),
  asin: Math.asin,
  acos: Math.acos,
  atan: Math.atan,
  atan2: Math.atan2,
  sinh: Math.sinh,
  cosh: Math.cosh,
  tanh: Math.tanh,
  asinh: Math.asinh,
  acosh: Math.acosh,
  atanh: Math.atanh,
  floor: Math.floor,
  ceil: Math.ceil,
  round: (x, digits = 0) => Math.round(x * 10 ** digits) / 10 ** digits,
  fix: Math.trunc,
  trunc: Math.trunc,
  sign: Math.sign,
  min: Math.min,
  max: Math.max,
  gcd: (...xs) => xs.reduce(gcd2),
  lcm: (...xs) => xs.reduce((a, b) => Math.abs(a * b) / gcd2(a, b)),
  factorial,
  gamma,
};

const MAX_DEPTH = 200;

class Parser {
  private i = 0;
  private depth = 0;
  constructor(private readonly s: string) {}

  parse(): number {
    const v = this.sum();
    this.space();
    if (this.i < this.s.length) throw this.unexpected();
    return v;
  }

  private space(): void {
    while (this.i < this.s.length && /\s/.test(this.s[this.i] as string)) this.i++;
  }

  private peek(): string {
    this.space();
    return this.s[this.i] ?? '';
  }

  private unexpected(): ToolError {
    const c = this.s[this.i] ?? '';
    const what: Record<string, string> = {
      '=': 'assignment',
      '[': 'a matrix',
      ':': 'a range',
      '.': 'property access',
      '<': 'a comparison',
      '>': 'a comparison',
      '?': 'a conditional',
      ';': 'several expressions',
      '{': 'an object',
    };
    if (what[c]) return refuse(`${what[c]} is not supported; only arithmetic on numbers is`);
    if (c === '"' || c === "'") return refuse(`the value ${this.s.slice(this.i)} is not a number`);
    return new ToolError(
      'handler_error',
      `cannot parse the expression: unexpected ${c ? `"${c}"` : 'end'} at position ${this.i + 1}`,
    );
  }

  private sum(): number {
    let v = this.product();
    for (;;) {
      const c = this.peek();
      if (c !== '+' && c !== '-') return v;
      this.i++;
      const r = this.product();
      v = c === '+' ? v + r : v - r;
    }
  }

  private product(): number {
    let v = this.unary();
    for (;;) {
      const c = this.peek();
      if (c === '*' && this.s[this.i + 1] !== '*') {
        this.i++;
        v *= this.unary();
      } else if (c === '/' || c === '%') {
        this.i++;
        const r = this.unary();
        v = c === '/' ? v / r : v % r;
      } else if (/[A-Za-z_(0-9]/.test(c)) {
        v *= this.unary(); // implicit multiplication: "2 pi", "3(4+1)"
      } else return v;
    }
  }

  private unary(): number {
    const c = this.peek();
    if (c === '-' || c === '+') {
      this.i++;
      const v = this.unary();
      return c === '-' ? -v : v;
    }
    return this.power();
  }

  private power(): number {
    const base = this.postfix();
    const c = this.peek();
    if (c === '^' || (c === '*' && this.s[this.i + 1] === '*')) {
      this.i += c === '^' ? 1 : 2;
      return base ** this.unary(); // right-associative
    }
    return base;
  }

  private postfix(): number {
    let v = this.primary();
    while (this.peek() === '!' && this.s[this.i + 1] !== '=') {
      this.i++;
      v = factorial(v);
    }
    return v;
  }

  private primary(): number {
    if (++this.depth > MAX_DEPTH) throw refuse(`the expression is nested deeper than ${MAX_DEPTH} levels`);
    try {
      const c = this.peek();
      if (c === '(') {
        this.i++;
        const v = this.sum();
        if (this.peek() !== ')') throw this.unexpected();
        this.i++;
        return v;
      }
      const num = /^(?:\d+\.?\d*|\.\d+)(?:[eE][+-]?\d+)?/.exec(this.s.slice(this.i));
      if (num) {
        this.i += num[0].length;
        return Number(num[0]);
      }
      const id = /^[A-Za-z_][A-Za-z0-9_]*/.exec(this.s.slice(this.i));
      if (!id) throw this.unexpected();
      this.i += id[0].length;
      const name = id[0];
      if (this.peek() === '(') return this.call(name);
      if (this.peek() === '.') throw this.unexpected();
      const value = Object.hasOwn(CONSTANTS, name) ? CONSTANTS[name] : undefined;
      if (value === undefined) throw refuse(`unknown name "${name}"; known constants: pi, e, tau, phi`);
      return value;
    } finally {
      this.depth--;
    }
  }

  private call(name: string): number {
    const fn = Object.hasOwn(FUNCTIONS, name) ? FUNCTIONS[name] : undefined;
    if (!fn) throw refuse(`the function "${name}" is not supported`);
    this.i++; // (
    const args: number[] = [];
    if (this.peek() !== ')') {
      for (;;) {
        args.push(this.sum());
        if (this.peek() !== ',') break;
        this.i++;
      }
    }
    if (this.peek() !== ')') throw this.unexpected();
    this.i++;
    return fn(...args);
  }
}

function refuse(why: string): ToolError {
  return new ToolError('handler_error', `cannot evaluate the expression: ${why}`);
}

/** calculate: evaluates an arithmetic expression without eval, to a finite number. */
export async function calculate(args: Record<string, unknown>, _ctx: HandlerContext): Promise<{ value: number }> {
  const expression = requireString(args, 'expression');
  const value = new Parser(expression).parse();
  if (Number.isNaN(value)) throw new ToolError('handler_error', 'the expression gives NaN, not a number');
  if (!Number.isFinite(value))
    throw new ToolError('handler_error', `the expression gives ${value}, not a finite number`);
  return { value: Object.is(value, -0) ? 0 : value };
}
