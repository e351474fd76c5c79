import { createHash } from 'node:crypto';
import { z } from 'zod';
import { LIMITS } from '../limits';

/** Stripe's rule: at most 255 printable ASCII characters (space to tilde). */
export const IdempotencyKey = z
  .string()
  .regex(
    new RegExp(`^[\\x20-\\x7e]{1,${LIMITS.idempotencyKeyChars}}$`),
    `At most ${LIMITS.idempotencyKeyChars} printable ASCII characters`,
  );

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
