import http from 'node:http';
import https from 'node:https';
import { isIP } from 'node:net';
import { LIMITS } from '../rules/limits';
import type { AddressPolicy } from './address-guard';
import { AddressRefusedError, addressRefusal, guardedLookup } from './address-guard';

/** One POST's outcome as an attempt records it. */
export interface SendResult {
  /** `succeeded`: a 2xx; `refused`: the address guard refused it (nothing was sent). */
  outcome: 'succeeded' | 'failed' | 'refused';
  latencyMs: number;
  responseCode: number | null;
  /** At most LIMITS.runCallbacks.storedBodyBytes of what was read (UTF-8, lossy). */
  responseBody: string | null;
  error: string | null;
}

/**
 * Posts signed callbacks. Agents without keep-alive whose `lookup` is the address guard: every
 * connection resolves afresh and is checked at connect time. An IP-literal URL never meets a lookup
 * (Node connects to it directly), so its address is checked before the request. No redirect is
 * followed (a 3xx is a failed attempt), the whole exchange has `timeoutMs`, and at most
 * `responseBodyBytes` of the answer are read.
 */
export function createCallbackSender(policy: AddressPolicy, limits = LIMITS.runCallbacks) {
  const lookup = guardedLookup(policy);
  const agents = {
    'http:': new http.Agent({ keepAlive: false, lookup }),
    'https:': new https.Agent({ keepAlive: false, lookup }),
  };

  return function send(url: string, body: string, headers: Record<string, string>): Promise<SendResult> {
    const started = performance.now();
    const elapsed = () => Math.round(performance.now() - started);
    const target = new URL(url);
    const host = target.hostname.replace(/^\[(.*)\]$/, '$1');
    const literalRefusal = isIP(host) ? addressRefusal(host, policy) : null;
    if (literalRefusal) {
      return Promise.resolve({
        outcome: 'refused',
        latencyMs: 0,
        responseCode: null,
        responseBody: null,
        error: literalRefusal,
      });
    }
    const client = target.protocol === 'https:' ? https : http;
    const agent = agents[target.protocol as keyof typeof agents];
    return new Promise<SendResult>((resolve) => {
      let settled = false;
      const finish = (result: Omit<SendResult, 'latencyMs'>) => {
        if (settled) return;
        settled = true;
        clearTimeout(timer);
        resolve({ ...result, latencyMs: elapsed() });
      };
      const request = client.request(target, {
        method: 'POST',
        agent,
        headers: { 'content-type': 'application/json', 'content-length': Buffer.byteLength(body), ...headers },
      });
      const timer = setTimeout(() => {
        request.destroy(new Error(`No answer within ${limits.timeoutMs} ms`));
      }, limits.timeoutMs);
      request.on('error', (error) => {
        const refused = error instanceof AddressRefusedError;
        finish({
          outcome: refused ? 'refused' : 'failed',
          responseCode: null,
          responseBody: null,
          error: error.message.slice(0, 500),
        });
      });
      request.on('response', (response) => {
        const chunks: Buffer[] = [];
        let read = 0;
        const done = () => {
          const text = Buffer.concat(chunks).subarray(0, limits.storedBodyBytes).toString('utf8');
          const code = response.statusCode ?? 0;
          finish({
            outcome: code >= 200 && code < 300 ? 'succeeded' : 'failed',
            responseCode: code,
            responseBody: text,
            error: code >= 300 && code < 400 ? 'Redirects are not followed' : null,
          });
          // Whatever is left unread stays unread: the connection goes.
          response.destroy();
        };
        response.on('data', (chunk: Buffer) => {
          const room = limits.responseBodyBytes - read;
          chunks.push(chunk.subarray(0, Math.max(room, 0)));
          read += chunk.length;
          if (read >= limits.responseBodyBytes) done();
        });
        response.on('end', done);
        response.on('error', done);
      });
      request.end(body);
    });
  };
}

export type CallbackSender = ReturnType<typeof createCallbackSender>;
