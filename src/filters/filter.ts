import { compile } from 'jmespath';
import { LIMITS } from '../rules/limits';

declare module 'jmespath' {
  // The library exports its parser too (it throws on a syntax error); @types/jmespath omits it.
  export function compile(expression: string): unknown;
}

/**
 * JMESPath filters (issue 16 part 3, review H-2), a leaf under their users: webhook triggers
 * filter deliveries, approval rules filter a step's input. This file checks an expression when
 * it is saved; `pool.ts` evaluates it off the event loop under a time and memory budget.
 */

/** What evaluating a filter came to: it matched, it did not, or it failed (`error` says why). */
export const FILTER_RESULTS = ['matched', 'not_matched', 'error'] as const;
export type FilterResult = (typeof FILTER_RESULTS)[number];

interface AstNode {
  type: string;
  children?: unknown[];
  value?: unknown;
}

const isNode = (value: unknown): value is AstNode =>
  typeof value === 'object' && value !== null && typeof (value as AstNode).type === 'string';

/**
 * How many times larger than its input an expression's result can be, read from its syntax tree
 * (review H-2): a multi-select yields the sum of its parts, and a chain (projection, flatten then
 * select, sub-expression, pipe) multiplies what each stage yields, so `[@,@]` followed by
 * `[].[@,@]` n times grows as 2^n. Everything else yields as much as all its parts together.
 */
export function fanOut(node: unknown): number {
  if (!isNode(node)) return 1;
  const parts = (node.children ?? []).filter(isNode);
  if (node.type === 'KeyValuePair') return fanOut(node.value);
  const each = parts.map(fanOut);
  const sum = each.reduce((a, b) => a + b, 0);
  switch (node.type) {
    case 'Projection':
    case 'ValueProjection':
    case 'Subexpression':
    case 'Pipe':
    case 'IndexExpression':
      return each.reduce((a, b) => a * b, 1);
    case 'FilterProjection':
      // children: left, right, condition; the condition runs once per element as the right side does.
      return (each[0] ?? 1) * Math.max(each[1] ?? 1, each[2] ?? 1);
    default:
      return Math.max(1, sum);
  }
}

/** Why a JMESPath expression cannot be saved (a syntax error, or too large a fan-out), or null. */
export function filterSyntaxError(expression: string): string | null {
  let ast: unknown;
  try {
    ast = compile(expression);
  } catch (error) {
    return `Not a JMESPath expression: ${error instanceof Error ? error.message : String(error)}`;
  }
  const factor = fanOut(ast);
  if (factor > LIMITS.webhook.filter.maxFanOut) {
    return (
      `The expression can yield up to ${factor} times its input (nested multi-selects, projections or ` +
      `flattens); at most ${LIMITS.webhook.filter.maxFanOut} is allowed`
    );
  }
  return null;
}

/**
 * The body as a filter sees it: parsed JSON, the parsed form for `application/x-www-form-urlencoded`
 * (a repeated field becomes an array), else the raw text.
 */
export function parseBodyForFilter(body: Buffer, contentType: string | undefined): unknown {
  const text = body.toString('utf8');
  const type = (contentType ?? '').split(';')[0]!.trim().toLowerCase();
  if (type === 'application/x-www-form-urlencoded') {
    // No prototype: fields named `constructor`, `toString` or `__proto__` are fields, not inherited members.
    const form: Record<string, string | string[]> = Object.create(null);
    for (const [key, value] of new URLSearchParams(text)) {
      const earlier = Object.hasOwn(form, key) ? form[key] : undefined;
      form[key] = earlier === undefined ? value : Array.isArray(earlier) ? [...earlier, value] : [earlier, value];
    }
    return form;
  }
  try {
    return JSON.parse(text);
  } catch {
    return text;
  }
}
