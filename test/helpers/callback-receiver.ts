import { createHmac, timingSafeEqual } from 'node:crypto';
import type { IncomingHttpHeaders, Server } from 'node:http';
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';

/** One POST the receiver got: its path, headers and exact body. */
export interface Received {
  path: string;
  headers: IncomingHttpHeaders;
  body: string;
}

/** What the receiver answers a path: a status and headers, in turn (the last one repeats). */
export interface Answer {
  status: number;
  headers?: Record<string, string>;
  body?: string;
}

/**
 * A real local HTTP receiver of run callbacks, as a customer would write one: it verifies
 * `X-Service-Signature` with its own code (below) before it trusts a body.
 */
export async function startReceiver() {
  const received: Received[] = [];
  const scripts = new Map<string, Answer[]>();
  const server: Server = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (chunk: Buffer) => chunks.push(chunk));
    req.on('end', () => {
      const path = req.url ?? '/';
      received.push({ path, headers: req.headers, body: Buffer.concat(chunks).toString('utf8') });
      const script = scripts.get(path) ?? [];
      const answer = (script.length > 1 ? script.shift() : script[0]) ?? { status: 200 };
      res.writeHead(answer.status, { 'content-type': 'text/plain', ...answer.headers });
      res.end(answer.body ?? 'ok');
    });
  });
  server.listen(0, '127.0.0.1');
  await new Promise<void>((resolve) => server.once('listening', () => resolve()));
  const port = (server.address() as AddressInfo).port;
  return {
    port,
    /** A URL of this receiver under `host` (127.0.0.1 unless told: `localhost` takes a DNS lookup). */
    url: (path: string, host = '127.0.0.1') => `http://${host}:${port}${path}`,
    answer: (path: string, ...answers: Answer[]) => scripts.set(path, answers),
    at: (path: string) => received.filter((request) => request.path === path),
    stop: () => new Promise<void>((resolve) => server.close(() => resolve())),
  };
}

/**
 * The receiver's own verification: `t=<unix>,v1=<hex>` with HMAC-SHA256 of `<t>.<body>` under the
 * secret, compared in constant time, `t` within five minutes.
 */
export function verifyCallback(header: string | undefined, body: string, secret: string, nowSeconds: number): boolean {
  const parts = Object.fromEntries((header ?? '').split(',').map((part) => part.split('=', 2) as [string, string]));
  const t = Number(parts.t);
  if (!Number.isInteger(t) || Math.abs(nowSeconds - t) > 300 || !/^[0-9a-f]{64}$/.test(parts.v1 ?? '')) return false;
  const expected = createHmac('sha256', secret).update(`${t}.${body}`).digest();
  return timingSafeEqual(expected, Buffer.from(parts.v1!, 'hex'));
}
