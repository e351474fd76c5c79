/**
 * Domain errors: what went wrong, in the domain's words, with a machine-readable code. Services,
 * activities and workflows throw these; only the API edge (`platform/api/errors.ts`) knows which
 * HTTP status each code becomes, and Temporal carries them as `ApplicationFailure`s whose type is
 * the code (`platform/temporal/failures.ts`). Safe to import from workflow code: no I/O.
 */
export const ERROR_CODES = [
  'bad_request',
  'validation_failed',
  'unauthenticated',
  'forbidden',
  'not_found',
  'conflict',
  'insufficient_credits',
  'rate_limited',
  'upstream_unavailable',
  'unavailable',
  'timeout',
  'internal',
] as const;
export type ErrorCode = (typeof ERROR_CODES)[number];

export const isErrorCode = (value: unknown): value is ErrorCode => ERROR_CODES.includes(value as ErrorCode);

/** One entry of a `validation_failed` error, in the contract's HTTPValidationError shape. */
export interface ValidationIssue {
  loc: (string | number)[];
  msg: string;
  type: string;
}

export interface DomainErrorOptions {
  /** Seconds after which a retry may succeed (rate limits, a briefly unavailable step). */
  retryAfterSeconds?: number;
  cause?: unknown;
}

/**
 * The base of every error a client may see. `detail` is user-safe: it becomes the contract's
 * `{"detail": …}` body as it is, so it never holds raw database or SDK text.
 */
export class DomainError extends Error {
  readonly retryAfterSeconds?: number;

  constructor(
    readonly code: ErrorCode,
    readonly detail: unknown,
    options: DomainErrorOptions = {},
  ) {
    super(typeof detail === 'string' ? detail : JSON.stringify(detail), { cause: options.cause });
    this.name = new.target.name;
    this.retryAfterSeconds = options.retryAfterSeconds;
  }
}

// Domain refusals that say "not now" rather than "never": worth retrying the work that met them.
const RETRYABLE_CODES: ReadonlySet<ErrorCode> = new Set(['unavailable', 'rate_limited', 'timeout']);

/** A domain error code that says "not now" (a stored failure's too: a retry should run again, not replay it). */
export const isRetryableCode = (code: string): boolean => RETRYABLE_CODES.has(code as ErrorCode);

/** A domain error that says "not now": a run's step or an outbox delivery retries, never fails on it. */
export const isRetryableRefusal = (error: unknown): boolean =>
  error instanceof DomainError && isRetryableCode(error.code);

export class BadRequestError extends DomainError {
  constructor(detail: unknown) {
    super('bad_request', detail);
  }
}

export class ValidationFailedError extends DomainError {
  constructor(readonly issues: ValidationIssue[]) {
    super('validation_failed', issues);
  }
}

export class UnauthenticatedError extends DomainError {
  constructor(detail: unknown = 'Not authenticated') {
    super('unauthenticated', detail);
  }
}

export class ForbiddenError extends DomainError {
  constructor(detail: unknown = 'Insufficient permissions') {
    super('forbidden', detail);
  }
}

/** Also what another workspace's resource is: 404, never 403, so ids reveal nothing. */
export class NotFoundError extends DomainError {
  constructor(detail: unknown = 'Not found') {
    super('not_found', detail);
  }
}

export class ConflictError extends DomainError {
  constructor(detail: unknown) {
    super('conflict', detail);
  }
}

export class RateLimitedError extends DomainError {
  constructor(retryAfterSeconds: number, detail: unknown = 'Rate limit exceeded') {
    super('rate_limited', detail, { retryAfterSeconds });
  }
}

/** A step of ours could not finish now (a workflow that is not answering, a lost race); retry later. */
export class UnavailableError extends DomainError {
  constructor(detail: unknown, retryAfterSeconds?: number) {
    super('unavailable', detail, { retryAfterSeconds });
  }
}

/** Weft gave up waiting on itself (a workflow past the request's deadline). */
export class DeadlineExceededError extends DomainError {
  constructor(detail: unknown = 'The request did not finish in time') {
    super('timeout', detail);
  }
}

/** Weft's own fault, reported without its inner text. */
export class InternalError extends DomainError {
  constructor(detail: unknown = 'Internal server error') {
    super('internal', detail);
  }
}
