import { randomUUID } from 'node:crypto';
import type { Middleware } from 'koa';
import { isUuid } from '../auth/tokens';
import type { Logger } from '../logger';

/**
 * Gives every request an id and a correlation id. A client-supplied `X-Correlation-Id` (a uuid)
 * is kept so a caller can follow its request through logs, audit rows and Temporal.
 */
export function requestContext(): Middleware {
  return async (ctx, next) => {
    const supplied = ctx.get('x-correlation-id');
    ctx.state.requestId = randomUUID();
    ctx.state.correlationId = isUuid(supplied) ? supplied.toLowerCase() : randomUUID();
    ctx.set('X-Request-Id', ctx.state.requestId);
    ctx.set('X-Correlation-Id', ctx.state.correlationId);
    await next();
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
