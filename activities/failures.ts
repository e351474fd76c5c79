import { Context } from '@temporalio/activity';
import { ApplicationFailure } from '@temporalio/common';
import { HttpError } from '../src/api/errors';

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
  if (error instanceof HttpError) {
    const details: FailureDetails = { status: error.status, detail: error.detail, errorCode: error.constructor.name };
    return ApplicationFailure.create({ type: error.constructor.name, message: error.message, nonRetryable: true, details: [details] });
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
