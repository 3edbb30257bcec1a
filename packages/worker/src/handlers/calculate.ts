import type { HandlerContext } from '@tool-dispatch/shared';
import { ToolError } from '@tool-dispatch/shared';
import { all, create, type MathNode } from 'mathjs';
import { requireString } from '../args.js';
import { errorMessage } from '../node-error.js';

const math = create(all!, { number: 'number' });
// Keep our own reference before the lock-down below replaces `parse` in the namespace.
const parseExpression = math.parse;

// mathjs's security advice: functions that alter the instance or parse new input are disabled.
const DISABLED = [
  'import',
  'createUnit',
  'reviver',
  'evaluate',
  'parse',
  'compile',
  'simplify',
  'simplifyConstant',
  'simplifyCore',
  'derivative',
  'resolve',
  'rationalize',
  'symbolicEqual',
  'leafCount',
];
math.import(
  Object.fromEntries(
    DISABLED.map((name) => [
      name,
      function disabled() {
        throw new Error(`function ${name} is disabled`);
      },
    ]),
  ),
  { override: true },
);

/**
 * Only scalar arithmetic is allowed: no assignments, function definitions, matrices, ranges,
 * units or strings, so every expression is bounded in time and memory by its length.
 */
const OPERATORS = new Set([
  'add',
  'subtract',
  'multiply',
  'divide',
  'pow',
  'mod',
  'unaryMinus',
  'unaryPlus',
  'factorial',
  'dotMultiply',
  'dotDivide',
  'dotPow',
]);
const FUNCTIONS = new Set([
  'abs',
  'sqrt',
  'cbrt',
  'nthRoot',
  'exp',
  'expm1',
  'log',
  'log2',
  'log10',
  'log1p',
  'pow',
  'mod',
  'hypot',
  'sin',
  'cos',
  'tan',
  'sec',
  'csc',
  'cot',
  'asin',
  'acos',
  'atan',
  'atan2',
  'sinh',
  'cosh',
  'tanh',
  'asinh',
  'acosh',
  'atanh',
  'floor',
  'ceil',
  'round',
  'fix',
  'sign',
  'min',
  'max',
  'gcd',
  'lcm',
  'factorial',
  'gamma',
]);
const CONSTANTS = new Set(['pi', 'e', 'tau', 'phi', 'PI', 'E', 'LN2', 'LN10', 'LOG2E', 'LOG10E', 'SQRT2', 'SQRT1_2']);

/** calculate: evaluates an arithmetic expression without eval, to a finite number. */
export async function calculate(args: Record<string, unknown>, _ctx: HandlerContext): Promise<{ value: number }> {
  const expression = requireString(args, 'expression');
  let node: MathNode;
  try {
    node = parseExpression(expression);
  } catch (e) {
    throw new ToolError('handler_error', `cannot parse the expression: ${errorMessage(e)}`);
  }
  checkNode(node);
  let value: unknown;
  try {
    value = node.compile().evaluate({});
  } catch (e) {
    throw new ToolError('handler_error', `cannot evaluate the expression: ${errorMessage(e)}`);
  }
  if (typeof value !== 'number') {
    throw new ToolError('handler_error', `the expression gives ${describe(value)}, not a number`);
  }
  if (!Number.isFinite(value)) {
    throw new ToolError('handler_error', `the expression gives ${value}, not a finite number`);
  }
  return { value };
}

function checkNode(node: MathNode): void {
  const n = node as MathNode & { name?: string; fn?: unknown; args?: MathNode[]; content?: MathNode; value?: unknown };
  switch (node.type) {
    case 'ConstantNode':
      if (typeof n.value !== 'number') throw refuse(`the value ${node.toString()} is not a number`);
      return;
    case 'SymbolNode':
      if (!CONSTANTS.has(n.name ?? '')) throw refuse(`unknown name "${n.name}"; known constants: pi, e, tau, phi`);
      return;
    case 'ParenthesisNode':
      if (n.content) checkNode(n.content);
      return;
    case 'OperatorNode':
      if (typeof n.fn !== 'string' || !OPERATORS.has(n.fn)) {
        throw refuse(`the operator "${(node as MathNode & { op?: string }).op}" is not supported`);
      }
      for (const arg of n.args ?? []) checkNode(arg);
      return;
    case 'FunctionNode': {
      const fn = n.fn as MathNode & { type: string; name?: string };
      if (fn.type !== 'SymbolNode' || !FUNCTIONS.has(fn.name ?? '')) {
        throw refuse(`the function "${fn.name ?? fn.toString()}" is not supported`);
      }
      for (const arg of n.args ?? []) checkNode(arg);
      return;
    }
    default:
      throw refuse(`${describeNode(node.type)} is not supported; only arithmetic on numbers is`);
  }
}

function refuse(why: string): ToolError {
  return new ToolError('handler_error', `cannot evaluate the expression: ${why}`);
}

function describeNode(type: string): string {
  const names: Record<string, string> = {
    AssignmentNode: 'assignment',
    FunctionAssignmentNode: 'defining a function',
    ArrayNode: 'a matrix',
    RangeNode: 'a range',
    ObjectNode: 'an object',
    AccessorNode: 'property access',
    IndexNode: 'indexing',
    ConditionalNode: 'a conditional',
    BlockNode: 'several expressions',
    RelationalNode: 'a comparison',
  };
  return names[type] ?? `a ${type}`;
}

function describe(value: unknown): string {
  if (typeof value === 'boolean') return `a boolean (${value})`;
  if (value === null || value === undefined) return 'no value';
  return `a ${typeof value === 'object' ? (value.constructor?.name ?? 'value') : typeof value}`;
}
