import { randomUUID } from 'node:crypto';
import { trace } from '@opentelemetry/api';
import type { Middleware } from 'koa';
import { z } from 'zod';
import type { Logger } from '../logger';
import { CORRELATION_ID_ATTRIBUTE } from '../telemetry/tracing';

// The rule response schemas use for `correlation_id` (z.uuid(): RFC 9562 version and variant), so
// an id accepted here can always be answered; a looser check let a prompt run, charge, then 500.
const CorrelationId = z.uuid();

/**
 * Gives every request an id and a correlation id. A client-supplied `X-Correlation-Id` (a uuid)
 * is kept so a caller can follow its request through logs, audit rows and Temporal; anything
 * else is replaced by a fresh id before any handler runs.
 */
export function requestContext(): Middleware {
  return async (ctx, next) => {
    const supplied = ctx.get('x-correlation-id');
    ctx.state.requestId = randomUUID();
    // Most requests send none: no parse (a failed zod parse builds an error object) for an empty header.
    const parsed = supplied ? CorrelationId.safeParse(supplied) : undefined;
    ctx.state.correlationId = parsed?.success ? parsed.data.toLowerCase() : randomUUID();
    ctx.set('X-Request-Id', ctx.state.requestId);
    ctx.set('X-Correlation-Id', ctx.state.correlationId);
    // The HTTP server span when tracing is on (docs/operations.md#tracing); undefined when it is off.
    const span = trace.getActiveSpan();
    span?.setAttribute(CORRELATION_ID_ATTRIBUTE, ctx.state.correlationId);
    await next();
    const route: unknown = ctx._matchedRoute;
    if (span && typeof route === 'string') {
      span.updateName(`${ctx.method} ${route}`);
      span.setAttribute('http.route', route);
    }
  };
}

/** One structured line per request. */
export function requestLogger(logger: Logger): Middleware {
  return async (ctx, next) => {
    const started = process.hrtime.bigint();
    try {
      await next();
    } finally {
      logger.info(
        {
          request_id: ctx.state.requestId,
          correlation_id: ctx.state.correlationId,
          method: ctx.method,
          path: ctx.path,
          status: ctx.status,
          ms: Number(process.hrtime.bigint() - started) / 1e6,
        },
        'request',
      );
    }
  };
}
