import { A2A_ERROR_CODE } from '@a2a-js/sdk/errors';
import type { Context } from 'koa';
import { RouteAnswer } from '../platform/api/route';
import type { EventStreams } from '../platform/api/sse';
import type { Principal } from '../platform/auth/principal';
import type { Logger } from '../platform/logger';
import { EVENT_ID_KEY } from './tasks';

type RpcAnswer = { jsonrpc: string; id: unknown; result?: unknown; error?: unknown };

/** The run event an item came from (1.0's `statusUpdate`/`artifactUpdate`, or 0.3's flat event), if any. */
function eventIdOf(answer: RpcAnswer): number | undefined {
  const result = (answer.result ?? {}) as Record<string, { metadata?: Record<string, unknown> } | undefined>;
  const metadata =
    result.statusUpdate?.metadata ??
    result.artifactUpdate?.metadata ??
    (result as { metadata?: Record<string, unknown> }).metadata;
  const id = metadata?.[EVENT_ID_KEY];
  return typeof id === 'number' ? id : undefined;
}

/**
 * Writes a streaming method's answers as SSE, as the SDK's own server does (`data:` a JSON-RPC response
 * per item), through the API's event streams (platform/api/sse.ts): the credential is re-checked, the
 * stream has a lifetime and a bounded buffer, and counts against the credential's open streams. Each
 * item from the run's log carries `id:` its event id (resume with Last-Event-ID). A failure before the
 * first item is a plain JSON-RPC error, not a stream.
 */
export async function streamA2A(
  ctx: Context,
  principal: Principal,
  answers: AsyncGenerator<RpcAnswer, void, undefined>,
  options: {
    id: unknown;
    aborted: AbortController;
    streams: EventStreams;
    logger: Logger;
    keepAliveMs: number;
    /** The transport's own mapping of an error to a JSON-RPC error (1.0's or 0.3's). */
    mapError: (error: unknown) => unknown;
  },
): Promise<RouteAnswer | undefined> {
  let first: IteratorResult<RpcAnswer, void>;
  try {
    first = await answers.next();
  } catch (error) {
    return new RouteAnswer(200, { jsonrpc: '2.0', id: options.id ?? null, error: options.mapError(error) });
  }
  let cursor = 0;
  let keepAlive: NodeJS.Timeout | undefined;
  const stream = options.streams.create(principal, {
    resumeFrom: () => cursor,
    onEnd: () => {
      clearInterval(keepAlive);
      options.aborted.abort();
    },
  });
  const write = (answer: RpcAnswer) => {
    const eventId = eventIdOf(answer);
    if (eventId !== undefined) cursor = eventId;
    stream.write(`${eventId !== undefined ? `id: ${eventId}\n` : ''}data: ${JSON.stringify(answer)}\n\n`);
  };
  stream.respond(ctx);
  keepAlive = setInterval(() => stream.write(': keep-alive\n\n'), options.keepAliveMs);
  keepAlive.unref();
  void (async () => {
    try {
      if (!first.done) write(first.value);
      for await (const answer of answers) {
        if (stream.ended) break;
        write(answer);
      }
    } catch (error) {
      if (!(await stream.lapsed(error))) {
        options.logger.warn({ err: error }, 'A2A stream failed; ending it');
        const failure = { code: A2A_ERROR_CODE.INTERNAL_ERROR, message: 'The stream failed; resubscribe to resume' };
        const data = JSON.stringify({ jsonrpc: '2.0', id: options.id ?? null, error: failure });
        stream.write(`event: error\ndata: ${data}\n\n`);
      }
    } finally {
      stream.end();
    }
  })();
  return undefined;
}
