import { createHmac, randomUUID } from 'node:crypto';
import http from 'node:http';
import { expect } from 'chai';
import { as, request } from './http';
import { getStack } from './stack';

/** The sender's side, written from the contract (4.6 rule 1), not imported from the service. */
export const sign = (secret: string, t: number, body: Buffer | string) =>
  createHmac('sha256', secret).update(`${t}.`).update(body).digest('hex');
export const nowSeconds = () => Math.floor(Date.now() / 1000);

export const playbook = { agent: 'playbook', input: { steps: [{ tool: 'billing.credits_balance' }] } };

export async function newTrigger(token: string, extra: Record<string, unknown> = {}) {
  const slug = `hook-${randomUUID().slice(0, 12)}`;
  const created = await as(token).post('/v1/triggers', { slug, run: playbook, ...extra });
  expect(created.status, JSON.stringify(created.body)).to.equal(201);
  return created.body as { id: string; slug: string; secret: string };
}

/** Posts raw bytes to the intake, signed with `secret` at `t` unless a signature is given. */
export function deliver(
  slug: string,
  body: Buffer | string,
  options: { secret?: string; t?: number; signature?: string; headers?: Record<string, string> } = {},
) {
  const t = options.t ?? nowSeconds();
  const headers: Record<string, string> = { 'content-type': 'application/json', ...options.headers };
  const signature = options.signature ?? (options.secret ? `t=${t},v1=${sign(options.secret, t, body)}` : undefined);
  if (signature !== undefined) headers['x-service-signature'] = signature;
  return request('POST', `/v1/triggers/webhook/${slug}`, { rawBody: body, headers });
}

/**
 * An intake request from another loopback address (all of 127.0.0.0/8 reaches the server), so a
 * test can act as a distinct source; answers status, headers and text. With `declaredLength`, only
 * the body given is written and the request is left open, as a sender of a large body would be.
 */
export function deliverFrom(
  localAddress: string,
  slug: string,
  body: string,
  options: { declaredLength?: number } = {},
): Promise<{ status: number; headers: http.IncomingHttpHeaders; text: string }> {
  const url = new URL(`${getStack().baseUrl}/v1/triggers/webhook/${slug}`);
  return new Promise((resolve, reject) => {
    const req = http.request({
      host: url.hostname,
      port: url.port,
      path: url.pathname,
      method: 'POST',
      localAddress,
      agent: false,
      headers: {
        'content-type': 'application/json',
        'content-length': options.declaredLength ?? Buffer.byteLength(body),
      },
    });
    req.on('response', (res) => {
      let text = '';
      res.on('data', (chunk) => {
        text += chunk;
      });
      res.on('end', () => {
        resolve({ status: res.statusCode!, headers: res.headers, text });
        req.destroy();
      });
    });
    // The server closes a connection whose body it left unread: a write still under way may fail.
    req.on('error', (error) => (error.message.match(/EPIPE|ECONNRESET|socket hang up/) ? undefined : reject(error)));
    if (options.declaredLength === undefined) req.end(body);
    else req.write(body);
  });
}

/** Runs `count` calls of `send`, `concurrency` at a time; their results in order. */
export async function inParallel<T>(count: number, concurrency: number, send: (i: number) => Promise<T>) {
  const results: T[] = new Array(count);
  let next = 0;
  await Promise.all(
    Array.from({ length: concurrency }, async () => {
      while (next < count) {
        const i = next++;
        results[i] = await send(i);
      }
    }),
  );
  return results;
}
