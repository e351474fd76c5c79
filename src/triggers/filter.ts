import { compile, search } from 'jmespath';
import type { FilterResult } from './entities';

declare module 'jmespath' {
  // The library exports its parser too (it throws on a syntax error); @types/jmespath omits it.
  export function compile(expression: string): unknown;
}

/** The syntax error of a JMESPath expression, or null when it compiles. */
export function filterSyntaxError(expression: string): string | null {
  try {
    compile(expression);
    return null;
  } catch (error) {
    return error instanceof Error ? error.message : String(error);
  }
}

/** What a filter sees (contract 4.6 rule 4). */
export interface FilterInput {
  headers: Record<string, string>;
  body: unknown;
  trigger: { id: string; slug: string };
}

// JMESPath's own truthiness: false, null, '', [] and {} are false.
const truthy = (value: unknown) =>
  !(
    value === false ||
    value === null ||
    value === undefined ||
    value === '' ||
    (Array.isArray(value) && value.length === 0) ||
    (typeof value === 'object' && value !== null && Object.keys(value).length === 0)
  );

/** Evaluates a saved expression; an evaluation error (a type error in a function, say) is an outcome, not a throw. */
export function evaluateFilter(
  expression: string | null,
  input: FilterInput,
): { result: FilterResult | null; error: string | null } {
  if (!expression) return { result: null, error: null };
  try {
    return { result: truthy(search(input, expression)) ? 'matched' : 'not_matched', error: null };
  } catch (error) {
    return { result: 'error', error: (error instanceof Error ? error.message : String(error)).slice(0, 500) };
  }
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
