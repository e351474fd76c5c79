import { createHmac, randomBytes } from 'node:crypto';

/**
 * The one signing scheme Weft speaks both ways (contract 4.6; Stripe's too): HMAC-SHA256 under a
 * shared secret of `<t>.<raw body bytes>`, `t` in unix seconds, sent as
 * `t=<t>,v1=<lowercase hex>`. The webhook intake verifies it (src/triggers/signature.ts) and run
 * callbacks sign with it (src/run-callbacks), so a receiver verifies Weft's callbacks with the
 * code it would use for Stripe's.
 */
export const timestampedDigest = (secret: string | Buffer, t: number, body: Buffer | string): Buffer =>
  createHmac('sha256', secret).update(`${t}.`).update(body).digest();

/** A fresh shared secret for this scheme: `whsec_` and 256 random bits in hex (a trigger's, a callback's). */
export const newSigningSecret = (): string => `whsec_${randomBytes(32).toString('hex')}`;

/** The header value `t=<t>,v1=<hex>` for `body` signed at `t` (seconds). */
export const signatureHeader = (secret: string | Buffer, body: Buffer | string, t: number): string =>
  `t=${t},v1=${timestampedDigest(secret, t, body).toString('hex')}`;
