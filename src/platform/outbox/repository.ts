import type { EntityManager } from 'typeorm';
import { queryFirst, queryRows } from '../db/query';
import { OutboxEvent } from './entities';

/**
 * One undelivered event: the row's columns. Handlers see it with the payload their contract
 * parsed; as read, the payload is whatever JSON the row holds.
 */
export interface OutboxMessage<Payload = unknown> {
  id: string;
  workspace_id: string;
  event_type: string;
  aggregate_id: string;
  payload: Payload;
}

const outbox = (m: EntityManager) => m.getRepository(OutboxEvent);

/** An event to write; `delaySeconds` holds it back (a request handed back to the outbox to arrive later). */
export interface NewOutboxEvent {
  workspaceId: string;
  eventType: string;
  aggregateId: string;
  payload?: Record<string, unknown>;
  delaySeconds?: number;
}

export async function insertOutboxEvent(m: EntityManager, event: NewOutboxEvent): Promise<void> {
  const delay = Math.max(0, Math.floor(event.delaySeconds ?? 0));
  await outbox(m).insert({
    workspaceId: event.workspaceId,
    eventType: event.eventType,
    aggregateId: event.aggregateId,
    payload: event.payload ?? {},
    ...(delay > 0 ? { nextAttemptAt: () => `now() + make_interval(secs => ${delay})` } : {}),
  });
}

/**
 * The scope's events due for delivery, after `after` in id order (a pass walks the whole backlog
 * once, so failing rows cannot hide the rows behind them). Raw SQL: ages on the database's clock.
 * Ordered by the bigint column, not the text `id` the rows carry (which would sort '10' before '9').
 */
export const dueEvents = (m: EntityManager, input: { after: string; minAgeSeconds: number; limit: number }) =>
  queryRows<OutboxMessage>(
    m,
    `SELECT id::text, workspace_id, event_type, aggregate_id, payload FROM outbox
     WHERE dispatched_at IS NULL AND dead_lettered_at IS NULL AND id > $1::bigint
       AND created_at <= now() - make_interval(secs => $2) AND next_attempt_at <= now()
     ORDER BY outbox.id LIMIT $3`,
    [input.after, input.minAgeSeconds, input.limit],
  );

export async function markDelivered(m: EntityManager, id: string): Promise<void> {
  await outbox(m).update(id, { dispatchedAt: () => 'now()', attempts: () => 'attempts + 1', lastError: null });
}

/**
 * Marks an aggregate's undelivered events of a type delivered: their handler's work was done by
 * the writer itself after its commit. Raw SQL: the partial pending index keeps it off delivered rows.
 */
export async function markDeliveredByAggregate(
  m: EntityManager,
  input: { eventType: string; aggregateId: string },
): Promise<void> {
  await queryRows(
    m,
    `UPDATE outbox SET dispatched_at = now(), attempts = attempts + 1, last_error = NULL
     WHERE dispatched_at IS NULL AND dead_lettered_at IS NULL AND event_type = $1 AND aggregate_id = $2`,
    [input.eventType, input.aggregateId],
  );
}

/**
 * Counts a failed attempt: the row waits `base × 2^attempts` seconds (at most `maxSeconds`) for its
 * next one. A permanent failure dead-letters it once it has failed `maxAttempts` times; a transient
 * one (Postgres or Temporal unavailable) never does, so an outage of any length strands nothing
 * (issue 24). Raw SQL: the backoff and the dead-letter decision read the row's own count,
 * atomically; the exponent is capped so a row retried for days cannot overflow. Whether it is now dead.
 */
export async function markFailed(
  m: EntityManager,
  input: {
    id: string;
    error: string;
    maxAttempts: number;
    baseSeconds: number;
    maxSeconds: number;
    permanent: boolean;
  },
): Promise<boolean> {
  const row = await queryFirst<{ dead: boolean }>(
    m,
    `UPDATE outbox SET attempts = attempts + 1, last_error = $2,
       next_attempt_at = now() + make_interval(secs => LEAST($4 * power(2, LEAST(attempts, 30)), $5)),
       dead_lettered_at = CASE WHEN $6 AND attempts + 1 >= $3 THEN now() END
     WHERE id = $1::bigint RETURNING dead_lettered_at IS NOT NULL AS dead`,
    [input.id, input.error.slice(0, 500), input.maxAttempts, input.baseSeconds, input.maxSeconds, input.permanent],
  );
  return row?.dead ?? false;
}

/**
 * Makes the scope's failed rows due now (Temporal is back: their backoff would only delay them).
 * Rows held back on purpose (`delaySeconds`) never failed, and keep their time.
 */
export async function releaseFailedEvents(m: EntityManager): Promise<void> {
  await queryRows(
    m,
    `UPDATE outbox SET next_attempt_at = now()
     WHERE dispatched_at IS NULL AND dead_lettered_at IS NULL AND last_error IS NOT NULL AND next_attempt_at > now()`,
    [],
  );
}

/**
 * Dead-letters a row at once, with the reason: an event the relay cannot deliver at all (unknown
 * type, malformed payload), for which a retry would change nothing.
 */
export async function markDeadLetter(m: EntityManager, input: { id: string; error: string }): Promise<void> {
  await queryRows(
    m,
    `UPDATE outbox SET attempts = attempts + 1, last_error = $2, dead_lettered_at = now() WHERE id = $1::bigint`,
    [input.id, input.error.slice(0, 500)],
  );
}

/**
 * Workspaces with events due for delivery, across every workspace: the definer function
 * `weft_outbox_pending_workspaces` tells only which workspaces, past RLS.
 */
export async function workspacesWithDueEvents(m: EntityManager, minAgeSeconds: number): Promise<string[]> {
  const rows = await queryRows<{ workspace_id: string }>(
    m,
    `SELECT weft_outbox_pending_workspaces(make_interval(secs => $1)) AS workspace_id`,
    [minAgeSeconds],
  );
  return rows.map((row) => row.workspace_id);
}

/** Deletes at most `limit` delivered rows older than the retention, in every workspace; returns how many. */
export async function purgeDeliveredEvents(
  m: EntityManager,
  input: { retentionDays: number; limit: number },
): Promise<number> {
  const row = await queryFirst<{ purged: number }>(
    m,
    `SELECT weft_outbox_purge_delivered(make_interval(days => $1), $2) AS purged`,
    [input.retentionDays, input.limit],
  );
  return row?.purged ?? 0;
}

/** Dead-lettered rows across every workspace (definer function: a count, no rows). */
export async function deadLetterCount(m: EntityManager): Promise<number> {
  const row = await queryFirst<{ n: number }>(m, `SELECT weft_outbox_dead_letter_count() AS n`, []);
  return row?.n ?? 0;
}

/** A dead-lettered row as the operator CLI lists it. */
export interface DeadLetter {
  id: string;
  workspace_id: string;
  event_type: string;
  aggregate_id: string;
  attempts: number;
  last_error: string | null;
  created_at: Date;
  dead_lettered_at: Date;
}

/**
 * The newest dead letters, for the operator CLI on the owner connection (it reads past RLS, as
 * the provisioning commands do). Raw SQL: bigint ids as text.
 */
export const listDeadLetters = (m: EntityManager, limit: number) =>
  queryRows<DeadLetter>(
    m,
    `SELECT id::text, workspace_id, event_type, aggregate_id, attempts, last_error, created_at, dead_lettered_at
     FROM outbox WHERE dead_lettered_at IS NOT NULL ORDER BY dead_lettered_at DESC, id DESC LIMIT $1`,
    [limit],
  );

/**
 * Puts dead letters back in line (all of them, or those ids): due now, with a fresh attempt count,
 * the last error kept for the record. The sweep delivers them within a minute. How many.
 */
export async function requeueDeadLetters(m: EntityManager, ids: readonly string[] | 'all'): Promise<number> {
  const rows = await queryRows<{ id: string }>(
    m,
    `UPDATE outbox SET dead_lettered_at = NULL, attempts = 0, next_attempt_at = now()
     WHERE dead_lettered_at IS NOT NULL AND ($1::boolean OR id = ANY($2::bigint[])) RETURNING id::text`,
    [ids === 'all', ids === 'all' ? [] : ids],
  );
  return rows.length;
}
