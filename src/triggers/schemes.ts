import { createHmac, randomBytes, timingSafeEqual } from 'node:crypto';
import { newSigningSecret, signatureHeader } from '../platform/crypto/signature';
import { LIMITS } from '../rules/limits';
import { verifiedAt } from './signature';

/**
 * Issue 28: the signature schemes real senders use, on the one intake. `weft` is the contract's
 * (4.6); `stripe` is the same scheme under Stripe's header; `github` signs the body alone (no
 * timestamp: its delivery id is the idempotency key, and the body itself the replay guard); `slack` signs
 * `v0:<ts>:<body>`; `standard` (Standard Webhooks, Svix) signs `<id>.<ts>.<body>` with a base64 key.
 * Every comparison is constant-time over equal lengths; every secret given is tried, so the
 * previous one verifies during the rotation grace whatever the scheme.
 */
export const SIGNATURE_SCHEMES = ['weft', 'stripe', 'github', 'slack', 'standard'] as const;
export type SignatureScheme = (typeof SIGNATURE_SCHEMES)[number];

/**
 * A verified request: `signedT` is the timestamp it was signed at, which with the body names the
 * signed request (one original per pair) unless the signature covers the delivery's id. GitHub
 * signs no timestamp and not its delivery header, so its signed request is the body alone:
 * `signedT` 0, and a captured body replayed under a fresh `X-GitHub-Delivery` still answers as the
 * first delivery.
 */
export interface Verified {
  signedT: number;
  /**
   * True when the signature covers the delivery's own id (Standard Webhooks signs `webhook-id`): the
   * id then names the message, so two deliveries of one body at one second under two ids are two
   * messages, and a replay can only repeat its id (the idempotency key answers it).
   */
  idSigned?: boolean;
}

const HEX_DIGEST = /^[0-9a-f]{64}$/;
const SECONDS = /^\d{1,12}$/;
const ZERO = Buffer.alloc(32);
const hmac = (key: string | Buffer) => createHmac('sha256', key);

const withinSkew = (t: number, nowSeconds: number) => Math.abs(nowSeconds - t) <= LIMITS.webhook.timestampSkewSeconds;

/** True when any of `candidates` equals `expected` (32 bytes); all are compared, none throws. */
function anyEquals(expected: Buffer, candidates: readonly (Buffer | null)[]): boolean {
  let matched = false;
  for (const candidate of candidates) {
    const wellFormed = candidate !== null && candidate.length === 32;
    if (timingSafeEqual(expected, wellFormed ? candidate : ZERO) && wellFormed) matched = true;
  }
  return matched;
}

const hexDigest = (value: string | undefined) => (value && HEX_DIGEST.test(value) ? Buffer.from(value, 'hex') : null);

/** A Standard Webhooks secret's key: the base64 after `whsec_`; null when it is not one. */
function standardKey(secret: string): Buffer | null {
  const encoded = secret.startsWith('whsec_') ? secret.slice('whsec_'.length) : secret;
  if (!/^[A-Za-z0-9+/]+={0,2}$/.test(encoded)) return null;
  const key = Buffer.from(encoded, 'base64');
  return key.length >= 16 ? key : null;
}

function verifyGithub(headers: Record<string, string>, body: Buffer, secrets: readonly string[]): Verified | null {
  const header = headers['x-hub-signature-256'];
  const digest = header?.startsWith('sha256=') ? hexDigest(header.slice('sha256='.length)) : null;
  let matched = false;
  for (const secret of secrets) if (anyEquals(hmac(secret).update(body).digest(), [digest])) matched = true;
  return matched ? { signedT: 0 } : null;
}

function verifySlack(
  headers: Record<string, string>,
  body: Buffer,
  secrets: readonly string[],
  nowSeconds: number,
): Verified | null {
  const ts = headers['x-slack-request-timestamp'];
  const header = headers['x-slack-signature'];
  if (!ts || !SECONDS.test(ts) || !withinSkew(Number(ts), nowSeconds)) return null;
  const digest = header?.startsWith('v0=') ? hexDigest(header.slice('v0='.length)) : null;
  let matched = false;
  for (const secret of secrets) {
    if (anyEquals(hmac(secret).update(`v0:${ts}:`).update(body).digest(), [digest])) matched = true;
  }
  return matched ? { signedT: Number(ts) } : null;
}

function verifyStandard(
  headers: Record<string, string>,
  body: Buffer,
  secrets: readonly string[],
  nowSeconds: number,
): Verified | null {
  const id = headers['webhook-id'];
  const ts = headers['webhook-timestamp'];
  if (!id || !ts || !SECONDS.test(ts) || !withinSkew(Number(ts), nowSeconds)) return null;
  // `v1,<base64>` entries separated by spaces; other versions (v1a: asymmetric) are not ours to check.
  const signatures = (headers['webhook-signature'] ?? '')
    .split(' ')
    .filter((entry) => entry.startsWith('v1,'))
    .map((entry) => Buffer.from(entry.slice(3), 'base64'));
  if (signatures.length === 0) return null;
  let matched = false;
  for (const secret of secrets) {
    const key = standardKey(secret);
    if (key && anyEquals(hmac(key).update(`${id}.${ts}.`).update(body).digest(), signatures)) matched = true;
  }
  return matched ? { signedT: Number(ts), idSigned: true } : null;
}

/** The verified request, or null when `scheme`'s signature is missing, malformed, wrong or stale. */
export function verifyDelivery(
  scheme: SignatureScheme,
  headers: Record<string, string>,
  body: Buffer,
  secrets: readonly string[],
  nowSeconds: number,
): Verified | null {
  switch (scheme) {
    case 'weft':
    case 'stripe': {
      const header = headers[scheme === 'weft' ? 'x-service-signature' : 'stripe-signature'];
      const signedT = verifiedAt(header, body, secrets, nowSeconds);
      return signedT === null ? null : { signedT };
    }
    case 'github':
      return verifyGithub(headers, body, secrets);
    case 'slack':
      return verifySlack(headers, body, secrets, nowSeconds);
    case 'standard':
      return verifyStandard(headers, body, secrets, nowSeconds);
  }
}

/** A string field of a JSON object body; undefined for any other body (parsed only for the schemes that need it). */
function bodyField(body: Buffer, field: string): string | undefined {
  try {
    const parsed: unknown = JSON.parse(body.toString('utf8'));
    if (parsed && typeof parsed === 'object' && !Array.isArray(parsed)) {
      const value = (parsed as Record<string, unknown>)[field];
      if (typeof value === 'string') return value;
    }
  } catch {
    // Not JSON: no delivery id in it.
  }
  return undefined;
}

/**
 * The idempotency key of a verified request: the sender's own delivery id where it sends one
 * (GitHub's `X-GitHub-Delivery`, Standard's `webhook-id`, Stripe's event `id`, Slack's `event_id`),
 * else `X-Service-Idempotency-Key`. A retry of one delivery then answers the earlier delivery and run.
 */
export function deliveryKey(
  scheme: SignatureScheme,
  headers: Record<string, string>,
  body: Buffer,
): string | undefined {
  const own = headers['x-service-idempotency-key'];
  switch (scheme) {
    case 'weft':
      return own;
    case 'github':
      return headers['x-github-delivery'] ?? own;
    case 'standard':
      return headers['webhook-id'] ?? own;
    case 'stripe':
      return bodyField(body, 'id') ?? own;
    case 'slack':
      return bodyField(body, 'event_id') ?? own;
  }
}

/** Slack's URL verification handshake: the challenge to echo, when a (verified) body is one. */
export function slackChallenge(scheme: SignatureScheme, body: Buffer): string | undefined {
  if (scheme !== 'slack' || bodyField(body, 'type') !== 'url_verification') return undefined;
  return bodyField(body, 'challenge');
}

/** A fresh secret in the format `scheme`'s senders expect (Standard Webhooks: `whsec_` + base64). */
export function newSecret(scheme: SignatureScheme): string {
  const bytes = randomBytes(32);
  if (scheme === 'standard') return `whsec_${bytes.toString('base64')}`;
  if (scheme === 'github' || scheme === 'slack') return bytes.toString('hex');
  return newSigningSecret();
}

/** Why `secret` cannot be `scheme`'s (a secret given on create or update: the one Stripe shows, say), or null. */
export function secretProblem(scheme: SignatureScheme, secret: string): string | null {
  if (scheme === 'standard' && !/^whsec_/.test(secret)) return 'A Standard Webhooks secret starts with whsec_';
  if (scheme === 'standard' && !standardKey(secret)) {
    return 'A Standard Webhooks secret is whsec_ and the base64 of at least 16 bytes';
  }
  return null;
}

/**
 * The headers `scheme`'s sender would send with `body`, signed with `secret` at `t` (seconds), `id`
 * naming the delivery where the scheme carries one: for `weft triggers send` and for the bench.
 */
export function signedHeaders(
  scheme: SignatureScheme,
  secret: string,
  body: Buffer,
  t: number,
  id: string,
): Record<string, string> {
  switch (scheme) {
    case 'weft':
    case 'stripe': {
      return { [scheme === 'weft' ? 'x-service-signature' : 'stripe-signature']: signatureHeader(secret, body, t) };
    }
    case 'github':
      return {
        'x-hub-signature-256': `sha256=${hmac(secret).update(body).digest('hex')}`,
        'x-github-delivery': id,
        'x-github-event': 'ping',
      };
    case 'slack':
      return {
        'x-slack-request-timestamp': String(t),
        'x-slack-signature': `v0=${hmac(secret).update(`v0:${t}:`).update(body).digest('hex')}`,
      };
    case 'standard': {
      const key = standardKey(secret) ?? Buffer.from(secret);
      const signature = hmac(key).update(`${id}.${t}.`).update(body).digest('base64');
      return { 'webhook-id': id, 'webhook-timestamp': String(t), 'webhook-signature': `v1,${signature}` };
    }
  }
}
