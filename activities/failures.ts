import { Context } from '@temporalio/activity';
import { ApplicationFailure } from '@temporalio/common';
import { QueryFailedError } from 'typeorm';
import { HttpError } from '../src/platform/api/errors';

/** What a workflow learns of a domain failure: enough to answer the client and write the audit row. */
export interface FailureDetails {
  status: number;
  detail: unknown;
  /** The class name of the raised error (contract 2.5, error_code). */
  errorCode: string;
}

/**
 * Domain errors (HttpError and its subclasses: 402, 404, 502, …) are final: retrying cannot change
 * the answer, and the model client already retried its own calls. Anything else (a dropped
 * connection, a deadlock) stays retryable under the activity's retry policy.
 */
export function classifyFailure(error: unknown): unknown {
  // Data exceptions (SQLSTATE class 22) and constraint violations (23) fail the same way every time.
  const sqlState = error instanceof QueryFailedError ? String((error as { code?: unknown }).code ?? '') : '';
  if (sqlState.startsWith('22') || sqlState.startsWith('23')) {
    const details: FailureDetails = { status: 500, detail: 'Internal server error', errorCode: 'QueryFailedError' };
    return ApplicationFailure.create({
      type: 'QueryFailedError',
      message: error instanceof Error ? error.message : String(error),
      nonRetryable: true,
      details: [details],
    });
  }
  if (error instanceof HttpError) {
    const details: FailureDetails = { status: error.status, detail: error.detail, errorCode: error.constructor.name };
    return ApplicationFailure.create({
      type: error.constructor.name,
      message: error.message,
      nonRetryable: true,
      details: [details],
    });
  }
  return error;
}

export async function classified<T>(work: () => Promise<T>): Promise<T> {
  try {
    return await work();
  } catch (error) {
    throw classifyFailure(error);
  }
}

/**
 * Heartbeats while a long call runs, so a worker that dies mid-call is noticed within the
 * heartbeat timeout and the activity is retried elsewhere instead of waiting out its whole timeout.
 */
export async function heartbeating<T>(work: () => Promise<T>, everyMs = 1000): Promise<T> {
  const context = Context.current();
  const timer = setInterval(() => context.heartbeat(), everyMs);
  try {
    return await work();
  } finally {
    clearInterval(timer);
  }
}
