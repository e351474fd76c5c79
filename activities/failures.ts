import { Context } from '@temporalio/activity';
import { QueryFailedError } from 'typeorm';
import { DomainError } from '../src/platform/errors';
import { detailsOf, toApplicationFailure } from '../src/platform/temporal/failures';
import { isTransient } from '../src/platform/transient';

/**
 * Domain errors (402, 404, 502, …) are final: retrying cannot change the answer, and the model
 * client already retried its own calls. They cross Temporal as ApplicationFailures typed by their
 * code. Anything else (a dropped connection, a deadlock) stays retryable under the retry policy.
 */
export function classifyFailure(error: unknown): unknown {
  // Postgres or Temporal briefly unavailable: retried under the activity's (unlimited) policy.
  if (isTransient(error)) return error;
  if (error instanceof DomainError) return toApplicationFailure(detailsOf(error), error.message);
  // Data exceptions (SQLSTATE class 22) and constraint violations (23) fail the same way every time.
  const sqlState = error instanceof QueryFailedError ? String((error as { code?: unknown }).code ?? '') : '';
  if (sqlState.startsWith('22') || sqlState.startsWith('23')) {
    const message = error instanceof Error ? error.message : String(error);
    return toApplicationFailure(
      { code: 'internal', errorClass: 'QueryFailedError', detail: 'Internal server error' },
      message,
    );
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

type ActivityFunctions = Record<string, (...args: never[]) => Promise<unknown>>;

/**
 * Every activity with its failures classified (`classifyFailure`), applied once over the whole set
 * so that no group can leave one out. `ownRule` names the few activities that decide their own
 * retries (a step's refusal retried as a plain error, a provider's few attempts): they run as written.
 */
export function classifiedActivities<T extends ActivityFunctions>(activities: T, ownRule: readonly (keyof T)[]): T {
  const wrapped: Record<string, unknown> = {};
  for (const [name, activity] of Object.entries(activities)) {
    wrapped[name] = ownRule.includes(name) ? activity : (...args: never[]) => classified(() => activity(...args));
  }
  return wrapped as T;
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
