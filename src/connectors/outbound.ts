import http from 'node:http';
import https from 'node:https';
import { isIP } from 'node:net';
import { Readable, Transform } from 'node:stream';
import { DomainError } from '../platform/errors';
import type { AddressPolicy } from '../run-callbacks/address-guard';
import { AddressRefusedError, addressRefusal, guardedLookup } from '../run-callbacks/address-guard';

/** Why a connector's call failed, as the caller and a run's step see it (docs/connectors.md). */
export type ConnectorFailure =
  | 'remote_error'
  | 'timeout'
  | 'response_too_large'
  | 'unreachable'
  | 'address_refused'
  | 'connector_removed'
  // A write whose answer was lost with the process making it: never sent again (call-ledger.ts).
  | 'outcome_unknown';

/**
 * A connector's call or discovery that failed at the remote end or on the way: 502 with
 * `{error, message, status?}`. Never retried as "not now" (a write may have happened).
 */
export class ConnectorCallError extends DomainError {
  constructor(
    readonly reason: ConnectorFailure,
    message: string,
    readonly status?: number,
    /** No connection was made, so nothing of the call was sent: safe to try again, even for a write. */
    readonly notSent = false,
  ) {
    super('upstream_unavailable', { error: reason, message: message.slice(0, 500), ...(status ? { status } : {}) });
  }
}

export interface OutboundLimits {
  maxResponseBytes: number;
}

/** One call's fetch: `failed` rejects when any of its responses was refused or too large. */
export interface CallFetch {
  fetch: (url: string | URL, init?: RequestInit) => Promise<Response>;
  failed: Promise<never>;
}

const LOOPBACK_NAMES = new Set(['localhost', '127.0.0.1', '::1', '[::1]']);
/** Errors of the connection itself: the request never left. */
const CONNECT_ERRORS = new Set(['ECONNREFUSED', 'EHOSTUNREACH', 'ENETUNREACH', 'ENOTFOUND', 'EAI_AGAIN']);

/**
 * Whether a failed call may be made again (issue 41): a read-only tool after a connection that
 * failed or broke or no answer in time, any tool when nothing was sent. Never a write that may have
 * been sent, never after an answer or a refusal.
 */
export const mayRetry = (error: unknown, readOnly: boolean): boolean =>
  error instanceof ConnectorCallError &&
  ((error.reason === 'unreachable' && (readOnly || error.notSent)) || (readOnly && error.reason === 'timeout'));

/**
 * Connectors' way out: the run callbacks' address guard judges the resolved address at connect
 * time (Agents without keep-alive whose `lookup` is the guard; an IP literal is judged before the
 * request), redirects are never followed (a 3xx fails), and a response body larger than the
 * connector's cap fails the call `response_too_large`. Weft's own port on a loopback name is refused.
 */
export function createOutbound(policy: AddressPolicy, ownPort: number) {
  const lookup = guardedLookup(policy);
  const agents = {
    'http:': new http.Agent({ keepAlive: false, lookup }),
    'https:': new https.Agent({ keepAlive: false, lookup }),
  };

  /** Why `url` may not be reached before any connection, or null. */
  function urlRefusal(url: URL): string | null {
    const host = url.hostname.replace(/^\[(.*)\]$/, '$1');
    const port = Number(url.port || (url.protocol === 'https:' ? 443 : 80));
    if (LOOPBACK_NAMES.has(host) && port === ownPort) return 'Weft’s own port is never a connector';
    return isIP(host) ? addressRefusal(host, policy) : null;
  }

  function callFetch(limits: OutboundLimits): CallFetch {
    let fail: (error: Error) => void = () => {};
    const failed = new Promise<never>((_, reject) => {
      fail = reject;
    });
    // Never unhandled: the caller races it, and a call that ended first leaves it pending or ignored.
    failed.catch(() => {});
    const refuse = (error: ConnectorCallError) => {
      fail(error);
      return error;
    };

    const fetch = (input: string | URL, init: RequestInit = {}): Promise<Response> => {
      const target = new URL(String(input));
      if (target.protocol !== 'http:' && target.protocol !== 'https:') {
        return Promise.reject(refuse(new ConnectorCallError('address_refused', 'Only http and https are allowed')));
      }
      const refusal = urlRefusal(target);
      if (refusal) return Promise.reject(refuse(new ConnectorCallError('address_refused', refusal)));
      const headers: Record<string, string> = {};
      new Headers(init.headers).forEach((value, key) => {
        headers[key] = value;
      });
      const client = target.protocol === 'https:' ? https : http;
      return new Promise<Response>((resolve, reject) => {
        const request = client.request(target, {
          method: init.method ?? 'GET',
          headers,
          agent: agents[target.protocol as keyof typeof agents],
        });
        const onAbort = () => request.destroy(new ConnectorCallError('timeout', 'The call was abandoned'));
        init.signal?.addEventListener('abort', onAbort, { once: true });
        request.on('error', (error) => {
          if (error instanceof ConnectorCallError) return reject(error);
          if (error instanceof AddressRefusedError) {
            return reject(refuse(new ConnectorCallError('address_refused', error.message)));
          }
          const code = (error as NodeJS.ErrnoException).code ?? '';
          reject(
            new ConnectorCallError('unreachable', `${target.host} did not answer`, undefined, CONNECT_ERRORS.has(code)),
          );
        });
        request.on('response', (response) => {
          const status = response.statusCode ?? 502;
          if (status >= 300 && status < 400) {
            response.resume();
            return reject(refuse(new ConnectorCallError('remote_error', 'Redirects are not followed', status)));
          }
          let seen = 0;
          const capped = new Transform({
            transform(chunk: Buffer, _encoding, done) {
              seen += chunk.length;
              if (seen > limits.maxResponseBytes) {
                const error = refuse(
                  new ConnectorCallError('response_too_large', `The answer passed ${limits.maxResponseBytes} bytes`),
                );
                response.destroy();
                return done(error);
              }
              done(null, chunk);
            },
          });
          response.pipe(capped);
          response.on('error', (error) => capped.destroy(error));
          const responseHeaders = new Headers();
          for (const [key, value] of Object.entries(response.headers)) {
            if (value !== undefined) responseHeaders.set(key, Array.isArray(value) ? value.join(', ') : value);
          }
          const empty = status === 204 || status === 304 || init.method === 'HEAD';
          if ((responseHeaders.get('content-type') ?? '').includes('text/event-stream')) {
            // A stream is handed on as it comes; its cap fails the call through `failed`.
            const body = Readable.toWeb(capped) as unknown as ReadableStream<Uint8Array>;
            return resolve(new Response(body, { status, headers: responseHeaders }));
          }
          const chunks: Buffer[] = [];
          capped.on('data', (chunk: Buffer) => chunks.push(chunk));
          capped.on('error', reject);
          capped.on('end', () =>
            resolve(new Response(empty ? null : Buffer.concat(chunks), { status, headers: responseHeaders })),
          );
        });
        if (init.body !== undefined && init.body !== null) request.end(String(init.body));
        else request.end();
      });
    };
    return { fetch, failed };
  }

  return {
    urlRefusal: (url: string) => urlRefusal(new URL(url)),
    callFetch,
    /** Runs `work` with one call's fetch, failing it `timeout` after `timeoutMs` or when a response was refused. */
    async within<T>(timeoutMs: number, limits: OutboundLimits, work: (call: CallFetch) => Promise<T>): Promise<T> {
      const call = callFetch(limits);
      let timer: NodeJS.Timeout | undefined;
      const timedOut = new Promise<never>((_, reject) => {
        timer = setTimeout(
          () => reject(new ConnectorCallError('timeout', `No answer within ${timeoutMs / 1000} s`)),
          timeoutMs,
        );
      });
      try {
        return await Promise.race([work(call), call.failed, timedOut]);
      } finally {
        clearTimeout(timer);
      }
    },
  };
}

export type Outbound = ReturnType<typeof createOutbound>;
