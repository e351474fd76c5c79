import type { Middleware } from 'koa';
import { ZodError } from 'zod';
import type { ErrorCode } from '../errors';
import { DeadlineExceededError, DomainError, UnavailableError, ValidationFailedError } from '../errors';
import type { Logger } from '../logger';
import { findFailureDetails, toDomainError } from '../temporal/failures';
import { TRANSIENT_RETRY_AFTER_SECONDS as RETRY_AFTER, transientKind } from '../transient';

/** The one place a domain error's code becomes an HTTP status (the contract's error table). */
const STATUS_OF: Record<ErrorCode, number> = {
  bad_request: 400,
  unauthenticated: 401,
  insufficient_credits: 402,
  forbidden: 403,
  not_found: 404,
  conflict: 409,
  validation_failed: 422,
  rate_limited: 429,
  internal: 500,
  upstream_unavailable: 502,
  unavailable: 503,
  timeout: 504,
};

/**
 * Transport-level refusals that belong to no feature (no route, wrong method, a body that is not
 * JSON or too large). Everything else a client sees is a DomainError.
 */
export class HttpError extends Error {
  constructor(
    readonly status: number,
    readonly detail: string,
  ) {
    super(detail);
  }
}

/** 422 in the HTTPValidationError shape: one entry per zod issue, located under `part`. */
export function validationError(part: 'body' | 'query' | 'path' | 'header', error: ZodError): ValidationFailedError {
  return new ValidationFailedError(
    error.issues.map((issue) => ({
      loc: [part, ...issue.path.map((segment) => (typeof segment === 'symbol' ? String(segment) : segment))],
      msg: issue.message,
      type: issue.code,
    })),
  );
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

// statement_timeout (or an operator's pg_cancel_backend): the database is slow, not gone.
const STATEMENT_CANCELLED = '57014';
// Idle-in-transaction timeout and too many connections: reachable but full, so retry in a second.
const BUSY = new Set(['25P03', '53300']);

/**
 * A database that is slow answers 504; Postgres or Temporal unreachable, restarting or full
 * (`platform/transient.ts`) answers 503 with Retry-After: retry shortly, never a 500 with its text.
 */
function infrastructureRefusal(error: unknown): DomainError | undefined {
  if (!(error instanceof Error)) return undefined;
  if ((error as { code?: unknown }).code === STATEMENT_CANCELLED) {
    return new DeadlineExceededError('The database did not answer in time');
  }
  const code = (error as { code?: unknown }).code;
  // pg-pool's words for DATABASE_ACQUIRE_TIMEOUT_MS passing on a checkout: our own pool is full.
  const poolFull = /timeout exceeded when trying to connect/i.test(error.message);
  if ((typeof code === 'string' && BUSY.has(code)) || poolFull) {
    return new UnavailableError('The database is busy; retry shortly', 1);
  }
  const kind = transientKind(error);
  if (kind === 'database') return new UnavailableError('The database is unavailable; retry shortly', RETRY_AFTER);
  if (kind === 'temporal')
    return new UnavailableError('The workflow service is unavailable; retry shortly', RETRY_AFTER);
  return undefined;
}

interface Answer {
  status: number;
  detail: unknown;
  headers: Record<string, string>;
}

function answerFor(error: DomainError): Answer {
  const headers: Record<string, string> = {};
  // RFC 6750's challenge; `/mcp`'s adds RFC 9728's `resource_metadata` (src/oauth/protocol.ts).
  if (error.code === 'unauthenticated') headers['WWW-Authenticate'] = 'Bearer realm="weft"';
  if (error.retryAfterSeconds !== undefined) headers['Retry-After'] = String(error.retryAfterSeconds);
  // An internal error's detail is never the inner text.
  const detail = error.code === 'internal' ? 'Internal server error' : error.detail;
  return { status: STATUS_OF[error.code], detail, headers };
}

/** What the client is told for `error`, or undefined when it is not one of ours (a 500). */
export function describeError(error: unknown): Answer | undefined {
  if (error instanceof DomainError) return answerFor(error);
  if (error instanceof HttpError) return { status: error.status, detail: error.detail, headers: {} };
  if (error instanceof ZodError) return answerFor(validationError('body', error));
  // A domain failure that crossed Temporal (a workflow's, an update's) keeps its code.
  const carried = findFailureDetails(error);
  if (carried) return answerFor(toDomainError(carried));
  const infrastructure = infrastructureRefusal(error);
  if (infrastructure) return answerFor(infrastructure);
  const refused = bodyParserError(error);
  return refused && { status: refused.status, detail: refused.detail, headers: {} };
}

/** The first middleware: every error leaves as JSON with the contract's shape. */
export function errorHandler(logger: Logger): Middleware {
  return async (ctx, next) => {
    try {
      await next();
    } catch (error) {
      let answer = describeError(error);
      if (!answer || answer.status === 500) {
        logger.error({ err: error, path: ctx.path, request_id: ctx.state.requestId }, 'unhandled error');
        answer ??= { status: 500, detail: 'Internal server error', headers: {} };
      }
      ctx.status = answer.status;
      ctx.set(answer.headers);
      ctx.body = { detail: answer.detail };
    }
  };
}
