import type { ActivityOptions, LocalActivityOptions } from '@temporalio/workflow';

/**
 * Named presets, so each workflow states intent rather than numbers.
 *
 * Database steps retry for as long as their workflow lives (no maximumAttempts: unlimited, the
 * interval capped): an outage of Postgres or Temporal is never a reason to end a run, a prompt or
 * a merge review (issue 24). What ends one is a domain error, which `activities/failures.ts`
 * raises as non-retryable, or the workflow's own deadline.
 */
export const databaseActivity: ActivityOptions = {
  startToCloseTimeout: '1 minute',
  retry: { initialInterval: '500ms', backoffCoefficient: 2, maximumInterval: '30s' },
};

export const maintenanceActivity: ActivityOptions = {
  startToCloseTimeout: '10 minutes',
  heartbeatTimeout: '1 minute',
  retry: { initialInterval: '5s', backoffCoefficient: 2, maximumInterval: '5 minutes', maximumAttempts: 5 },
};

/** A step a person is waiting on over HTTP (a reviewer's decision): fail fast so they can retry. */
export const interactiveActivity: ActivityOptions = {
  startToCloseTimeout: '30 seconds',
  retry: { initialInterval: '200ms', backoffCoefficient: 2, maximumInterval: '2s', maximumAttempts: 4 },
};

/**
 * Embedding a batch: the provider client retries HTTP failures itself; the activity gives a
 * provider failure a few more attempts before the batch is refunded, and a database outage as
 * many as it takes (it counts its own attempts, so the policy sets no maximum).
 */
export const embeddingActivity: ActivityOptions = {
  startToCloseTimeout: '2 minutes',
  retry: { initialInterval: '1s', backoffCoefficient: 2, maximumInterval: '10s' },
};

/**
 * Model calls heartbeat every second: a worker killed mid-call is noticed within 5 s and the call
 * is retried on another worker. The client inside already retries HTTP failures, so few attempts.
 */
export const modelActivity: ActivityOptions = {
  startToCloseTimeout: '2 minutes',
  heartbeatTimeout: '5s',
  retry: { initialInterval: '200ms', backoffCoefficient: 2, maximumInterval: '5s', maximumAttempts: 3 },
};

/**
 * A workspace's community summaries: one model call per changed community (at most
 * LIMITS.communities.summariesPerPass), heartbeating every second. A model failure is recorded on
 * its community, not thrown; what is retried is the database or a lost worker, and a retry resumes
 * with the communities still pending.
 */
export const communitySummaryActivity: ActivityOptions = {
  startToCloseTimeout: '15 minutes',
  heartbeatTimeout: '10s',
  retry: { initialInterval: '1s', backoffCoefficient: 2, maximumInterval: '30s', maximumAttempts: 5 },
};

/**
 * Short, idempotent database steps of a request someone waits on (the prompt saga's charge,
 * persist, audit): run as local activities, in the workflow's own worker, which spares each step
 * a round trip through the server. They are keyed by the workflow, so a re-run after a crash is
 * harmless. Unlimited attempts like `databaseActivity`; past the local retry threshold each retry
 * waits on a workflow timer, so a long outage costs a few history events a minute, not a failure.
 */
export const databaseLocalActivity: LocalActivityOptions = {
  startToCloseTimeout: '30 seconds',
  localRetryThreshold: '10 seconds',
  retry: { initialInterval: '200ms', backoffCoefficient: 2, maximumInterval: '10s' },
};

/**
 * The llm agent's planning call: a model call between database reads. The model client retries
 * the provider itself and its failures are domain errors (final at once); what else fails is the
 * database, retried for as long as the run lives (issue 24), so no maximum of attempts.
 */
export const planningActivity: ActivityOptions = {
  startToCloseTimeout: '2 minutes',
  heartbeatTimeout: '5s',
  retry: { initialInterval: '200ms', backoffCoefficient: 2, maximumInterval: '5s' },
};
