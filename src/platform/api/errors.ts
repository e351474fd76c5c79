import type { Middleware } from 'koa';
import { ZodError } from 'zod';
import type { Logger } from '../logger';

/**
 * A failure a client can act on. Services throw these; `errorHandler` turns them into the
 * contract's `{"detail": ...}` bodies. Anything else is a 500 with a generic message.
 */
export class HttpError extends Error {
  constructor(
    readonly status: number,
    readonly detail: unknown,
    readonly headers: Record<string, string> = {},
  ) {
    super(typeof detail === 'string' ? detail : JSON.stringify(detail));
  }
}

export const badRequest = (detail: unknown) => new HttpError(400, detail);
export const unauthorized = (detail = 'Not authenticated') =>
  new HttpError(401, detail, { 'WWW-Authenticate': 'Bearer' });
export const forbidden = (detail: unknown = 'Insufficient permissions') => new HttpError(403, detail);
export const notFound = (detail: unknown = 'Not found') => new HttpError(404, detail);
export const conflict = (detail: unknown) => new HttpError(409, detail);
export const tooManyRequests = (retryAfterSeconds: number) =>
  new HttpError(429, 'Rate limit exceeded', { 'Retry-After': String(retryAfterSeconds) });
export const badGateway = (detail: unknown = 'External service unavailable') => new HttpError(502, detail);

export interface ValidationIssue {
  loc: (string | number)[];
  msg: string;
  type: string;
}

/** 422 in the HTTPValidationError shape: one entry per zod issue, located under `part`. */
export function validationError(part: 'body' | 'query' | 'path' | 'header', error: ZodError): HttpError {
  const detail: ValidationIssue[] = error.issues.map((issue) => ({
    loc: [part, ...issue.path.map((segment) => (typeof segment === 'symbol' ? String(segment) : segment))],
    msg: issue.message,
    type: issue.code,
  }));
  return new HttpError(422, detail);
}

// koa-body and raw-body signal malformed or oversize input with these statuses/types.
function bodyParserError(error: unknown): HttpError | undefined {
  if (!(error instanceof Error)) return undefined;
  const status =
    (error as { status?: number; statusCode?: number }).status ?? (error as { statusCode?: number }).statusCode;
  const type = (error as { type?: string }).type;
  if (status === 413 || type === 'entity.too.large') return new HttpError(413, 'Request body too large');
  if (status === 415) return new HttpError(415, 'Unsupported media type');
  if (status === 400 || type === 'entity.parse.failed' || error instanceof SyntaxError) {
    return new HttpError(400, 'Malformed request body');
  }
  return undefined;
}

/** The first middleware: every error leaves as JSON with the contract's shape. */
export function errorHandler(logger: Logger): Middleware {
  return async (ctx, next) => {
    try {
      await next();
    } catch (error) {
      let http = error instanceof HttpError ? error : undefined;
      if (!http && error instanceof ZodError) http = validationError('body', error);
      http ??= bodyParserError(error);
      if (!http) {
        logger.error({ err: error, path: ctx.path, request_id: ctx.state.requestId }, 'unhandled error');
        http = new HttpError(500, 'Internal server error');
      }
      ctx.status = http.status;
      ctx.set(http.headers);
      ctx.body = { detail: http.detail };
    }
  };
}
