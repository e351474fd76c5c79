import type { z } from 'zod';
import { InternalError } from '../errors';

/**
 * How an answer meets its schema, the one rule for a route's response and a capability's output: a schema
 * that fills in or rewrites fields (a default, a transform, a coercion) shapes every answer; any other
 * only checks it, and only where answers are checked (RESPONSE_VALIDATION: the test suite, not
 * production), since the check's cost is paid by every request for a bug the suite would catch. A checked
 * answer is sent as the handler made it, so it is the same checked or not; a field the schema would strip
 * is a bug of ours too. `what` names the answer in the error (a 500, never a 422 about the caller's input).
 * Answers the function to apply, or undefined when there is nothing to do.
 */
export function answerCheck(
  schema: z.ZodType,
  what: string,
  validate: boolean,
): ((result: unknown) => unknown) | undefined {
  const shape = (result: unknown) => {
    const shaped = schema.safeParse(result);
    if (shaped.success) return shaped.data;
    throw new InternalError(`${what} does not match its schema: ${shaped.error.message}`);
  };
  if (rewrites(schema)) return shape;
  if (!validate) return undefined;
  return (result) => {
    const difference = firstDifference(
      JSON.parse(JSON.stringify(result) ?? 'null'),
      JSON.parse(JSON.stringify(shape(result)) ?? 'null'),
      '$',
    );
    if (difference) throw new InternalError(`${what} has a field its schema strips: ${difference}`);
    return result;
  };
}

const REWRITING = new Set(['default', 'prefault', 'transform', 'pipe', 'catch']);

/**
 * Whether parsing with `schema` may change what it accepts (a default filled in, a transform, a
 * coercion), found by walking its definition.
 */
export function rewrites(schema: unknown, seen = new Set<unknown>()): boolean {
  if (typeof schema !== 'object' || schema === null || seen.has(schema)) return false;
  seen.add(schema);
  const def = (schema as { _zod?: { def?: Record<string, unknown> } })._zod?.def;
  if (!def) return false;
  if (REWRITING.has(def.type as string) || def.coerce === true) return true;
  if (def.type === 'lazy' && typeof def.getter === 'function') return rewrites(def.getter(), seen);
  const inner = (value: unknown): boolean =>
    Array.isArray(value)
      ? value.some(inner)
      : typeof value === 'object' && value !== null && !('_zod' in value)
        ? Object.values(value).some(inner)
        : rewrites(value, seen);
  return Object.entries(def).some(([key, value]) => key !== 'checks' && inner(value));
}

/** Where two parsed JSON values first differ (object keys in any order), as a path; undefined when equal. */
function firstDifference(a: unknown, b: unknown, path: string): string | undefined {
  if (a === b) return undefined;
  if (typeof a !== 'object' || typeof b !== 'object' || a === null || b === null) return path;
  if (Array.isArray(a) !== Array.isArray(b)) return path;
  const left = a as Record<string, unknown>;
  const right = b as Record<string, unknown>;
  for (const key of new Set([...Object.keys(left), ...Object.keys(right)])) {
    if (!Object.hasOwn(left, key) || !Object.hasOwn(right, key)) return `${path}.${key}`;
    const inner = firstDifference(left[key], right[key], `${path}.${key}`);
    if (inner) return inner;
  }
  return undefined;
}
