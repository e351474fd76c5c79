import { timingSafeEqual } from 'node:crypto';
import { timestampedDigest } from '../platform/crypto/signature';
import { LIMITS } from '../rules/limits';

/**
 * Contract 4.6 rules 1–2: `X-Service-Signature: t=<unix seconds>,v1=<hex>[,v1=<hex>…]`, where each
 * v1 may be HMAC-SHA256 of `<t>.<raw body bytes>` under the trigger's current secret (or its
 * previous one during the rotation grace). Any one matching v1 passes, as stripe-node accepts.
 *
 * Strict by design: the digest must be 64 lowercase hex characters, as the contract writes it
 * (an uppercase digest does not match), `t` must be decimal seconds within ±300 s either way, and
 * every comparison is constant-time over equal lengths, so a malformed value never throws.
 */
export interface ParsedSignature {
  timestamp: number;
  digests: string[];
}

const DIGEST = /^[0-9a-f]{64}$/;
const SECONDS = /^\d{1,12}$/;

/** Null when the header is missing or malformed: no single `t`, or no `v1`. */
export function parseSignatureHeader(header: string | undefined): ParsedSignature | null {
  if (!header) return null;
  let timestamp: number | undefined;
  const digests: string[] = [];
  for (const part of header.split(',')) {
    const at = part.indexOf('=');
    if (at < 0) continue;
    const key = part.slice(0, at).trim();
    const value = part.slice(at + 1).trim();
    if (key === 't') {
      if (timestamp !== undefined || !SECONDS.test(value)) return null;
      timestamp = Number(value);
    } else if (key === 'v1') digests.push(value);
  }
  if (timestamp === undefined || digests.length === 0) return null;
  return { timestamp, digests };
}

const ZERO = Buffer.alloc(32);

/**
 * True when the header is well formed, `t` is within the skew window of `nowSeconds` in both
 * directions, and some v1 equals the HMAC under one of `secrets`.
 */
export function verifySignature(
  header: string | undefined,
  body: Buffer,
  secrets: readonly string[],
  nowSeconds: number,
): boolean {
  return verifiedAt(header, body, secrets, nowSeconds) !== null;
}

/**
 * The `t` a request was verifiably signed at, or null when it does not verify (see verifySignature).
 * With the body, it names the signed request: the intake keeps one original per (t, body).
 */
export function verifiedAt(
  header: string | undefined,
  body: Buffer,
  secrets: readonly string[],
  nowSeconds: number,
): number | null {
  const parsed = parseSignatureHeader(header);
  if (!parsed) return null;
  if (Math.abs(nowSeconds - parsed.timestamp) > LIMITS.webhook.timestampSkewSeconds) return null;
  let matched = false;
  for (const secret of secrets) {
    const expected = timestampedDigest(secret, parsed.timestamp, body);
    for (const digest of parsed.digests) {
      const wellFormed = DIGEST.test(digest);
      // Always 32 bytes on each side: a wrong length compares against zeros instead of throwing.
      const candidate = wellFormed ? Buffer.from(digest, 'hex') : ZERO;
      if (timingSafeEqual(expected, candidate) && wellFormed) matched = true;
    }
  }
  return matched ? parsed.timestamp : null;
}
