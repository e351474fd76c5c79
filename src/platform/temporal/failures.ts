import { ApplicationFailure } from '@temporalio/common';
import type { ErrorCode } from '../errors';
import { DomainError, isErrorCode } from '../errors';

/**
 * A domain error as it crosses Temporal: the `ApplicationFailure`'s type is the error's code and
 * its first detail is this record. Workflow-safe (no I/O), so workflows use it too.
 */
export interface FailureDetails {
  code: ErrorCode;
  /** The class name of the raised error (the prompt audit's `error_code`). */
  errorClass: string;
  detail: unknown;
  retryAfterSeconds?: number;
}

/** Domain errors are final: retrying cannot change the answer. */
export function toApplicationFailure(
  details: FailureDetails,
  message = String(details.errorClass),
): ApplicationFailure {
  return ApplicationFailure.create({ type: details.code, message, nonRetryable: true, details: [details] });
}

export const detailsOf = (error: DomainError): FailureDetails => ({
  code: error.code,
  errorClass: error.name,
  detail: error.detail,
  ...(error.retryAfterSeconds === undefined ? {} : { retryAfterSeconds: error.retryAfterSeconds }),
});

/**
 * The domain failure inside whatever Temporal raised (a WorkflowFailedError, an ActivityFailure,
 * an update's failure …): the first ApplicationFailure in the cause chain whose type is a code.
 */
export function findFailureDetails(error: unknown): FailureDetails | undefined {
  for (let current: unknown = error; current instanceof Error; current = current.cause) {
    if (current instanceof ApplicationFailure && isErrorCode(current.type)) {
      const recorded = current.details?.[0] as Partial<FailureDetails> | undefined;
      return {
        code: current.type,
        errorClass: recorded?.errorClass ?? 'ApplicationFailure',
        detail: recorded?.detail ?? current.message,
        ...(recorded?.retryAfterSeconds === undefined ? {} : { retryAfterSeconds: recorded.retryAfterSeconds }),
      };
    }
  }
  return undefined;
}

/** Rebuilds the domain error on this side of Temporal, keeping the original class name. */
export function toDomainError(details: FailureDetails): DomainError {
  const error = new DomainError(details.code, details.detail, { retryAfterSeconds: details.retryAfterSeconds });
  error.name = details.errorClass;
  return error;
}
