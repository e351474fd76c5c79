import { createHash } from 'node:crypto';
import { z } from 'zod';
import { ConflictError, ValidationFailedError } from '../platform/errors';
import { LIMITS } from '../rules/limits';

/** Stripe's rule: at most 255 printable ASCII characters (space to tilde). */
export const IdempotencyKey = z
  .string()
  .regex(
    new RegExp(`^[\\x20-\\x7e]{1,${LIMITS.idempotencyKeyChars}}$`),
    `At most ${LIMITS.idempotencyKeyChars} printable ASCII characters`,
  );

/** `<execution_id>:<step_no>`: how a run's step keys its tool call and its charge (src/runs/steps.ts). */
const RUN_STEP_KEY = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}:[0-9]/i;

/**
 * A key a caller sends (`/v1/cap`, MCP): run step keys are reserved, as `webhook:` is on `/v1/runs`,
 * since a member who took one first would make the run's step fail, or replay the member's answer.
 */
export const CallerIdempotencyKey = IdempotencyKey.refine((key) => !RUN_STEP_KEY.test(key), {
  message: 'Keys of the form <execution_id>:<step_no> are reserved for run steps',
});

/** JSON with object keys sorted at every level, so `{"a":1,"b":2}` and `{"b":2,"a":1}` are one request. */
export function canonicalJson(value: unknown): string {
  if (Array.isArray(value)) return `[${value.map(canonicalJson).join(',')}]`;
  if (value !== null && typeof value === 'object') {
    const entries = Object.entries(value as Record<string, unknown>)
      .filter(([, item]) => item !== undefined)
      .sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0));
    return `{${entries.map(([key, item]) => `${JSON.stringify(key)}:${canonicalJson(item)}`).join(',')}}`;
  }
  return JSON.stringify(value ?? null);
}

/** What a key remembers of its first request: the SHA-256 of its body in canonical JSON. */
export const requestHash = (body: unknown) => createHash('sha256').update(canonicalJson(body), 'utf8').digest('hex');

/** `value` as an idempotency key of `schema`, or a 422 `idempotency_key_invalid` at `loc`. */
export function parseIdempotencyKey(schema: z.ZodType<string>, value: unknown, loc: string[]): string {
  const parsed = schema.safeParse(value);
  if (parsed.success) return parsed.data;
  throw new ValidationFailedError([{ loc, msg: parsed.error.issues[0]!.message, type: 'idempotency_key_invalid' }]);
}

/** 409 `idempotency_key_reused`: the key answered, or is answering, another tool or request body. */
export const keyReusedError = () =>
  new ConflictError({
    error: 'idempotency_key_reused',
    message: 'This Idempotency-Key was used with another tool or request body',
  });
