import { createHash, timingSafeEqual } from 'node:crypto';
import type { Server } from 'node:http';
import { createServer } from 'node:http';
import { exposition, METRICS_CONTENT_TYPE } from './registry';

/**
 * Whether a scrape may read the metrics: anyone when no METRICS_TOKEN is configured (the port is
 * then the operator's to fence), else only `Authorization: Bearer <token>`, compared in constant time.
 */
export function scrapeAllowed(authorization: string | undefined, token: string | undefined): boolean {
  if (!token) return true;
  const match = /^Bearer (.+)$/i.exec(authorization ?? '');
  if (!match) return false;
  const digest = (text: string) => createHash('sha256').update(text).digest();
  return timingSafeEqual(digest(match[1]!), digest(token));
}

export interface MetricsServerOptions {
  host: string;
  port: number;
  token?: string;
  /** Another exporter's endpoint whose text is appended (the Temporal SDK's, on loopback). */
  upstream?: string;
  /** How long to wait for the upstream before answering without it. */
  upstreamTimeoutMs?: number;
}

/** Fetches another exporter's text; empty (and the scrape still answers) when it does not answer in time. */
async function upstreamText(url: string | undefined, timeoutMs: number): Promise<string> {
  if (!url) return '';
  try {
    const response = await fetch(url, { signal: AbortSignal.timeout(timeoutMs) });
    return response.ok ? await response.text() : '';
  } catch {
    return '';
  }
}

/**
 * A worker process's own `GET /metrics` (it has no API to serve it): the process registry, then the
 * Temporal SDK's worker metrics. Every other path is 404; a scrape without the token is 401.
 */
export async function startMetricsServer(
  options: MetricsServerOptions,
): Promise<{ server: Server; stop(): Promise<void> }> {
  const server = createServer((request, response) => {
    const path = (request.url ?? '').split('?')[0];
    if (request.method !== 'GET' || path !== '/metrics') {
      response.writeHead(404, { 'content-type': 'application/json' }).end('{"detail":"Not found"}');
      return;
    }
    if (!scrapeAllowed(request.headers.authorization, options.token)) {
      response
        .writeHead(401, { 'content-type': 'application/json', 'www-authenticate': 'Bearer' })
        .end('{"detail":"A metrics token is required"}');
      return;
    }
    upstreamText(options.upstream, options.upstreamTimeoutMs ?? 2000)
      .then((extra) => exposition(extra))
      .then(
        (text) => response.writeHead(200, { 'content-type': METRICS_CONTENT_TYPE }).end(text),
        () => response.writeHead(500).end(),
      );
  });
  server.listen(options.port, options.host);
  await new Promise<void>((resolve, reject) => {
    server.once('listening', () => resolve());
    server.once('error', reject);
  });
  return {
    server,
    stop: () => new Promise<void>((resolve) => server.close(() => resolve())),
  };
}
