import type { EntityManager } from 'typeorm';
import type { StoredPrincipal } from '../platform/auth/stored-principal';
import { affectedRows, queryFirst, queryRows } from '../platform/db/query';
import type { CallbackEventType } from './events';
import type { CallbackFormat } from './formats';

/**
 * Whom a subscription's deliveries act as: the creating credential (for a dispatch's callback, the
 * dispatching one), frozen at creation and checked before every attempt. Who and which credential
 * only: a delivery acts with no scopes.
 */
export type CallbackPrincipal = Pick<StoredPrincipal, 'userId' | 'credential'>;

export interface SubscriptionRow {
  id: string;
  workspace_id: string;
  execution_id: string | null;
  url: string;
  events: CallbackEventType[];
  secret_sealed: string;
  principal: CallbackPrincipal;
  description: string | null;
  /** How its bodies are written: Weft's envelope or A2A push notifications. */
  format: CallbackFormat;
  /** An A2A push config's `{token, authentication}`, sealed; null for Weft's callbacks. */
  receiver_auth_sealed: string | null;
  created_at: Date;
}

const SUBSCRIPTION_COLUMNS = `id, workspace_id, execution_id, url, events, secret_sealed, principal, description,
  format, receiver_auth_sealed, created_at`;

export async function insertSubscription(
  m: EntityManager,
  row: Omit<SubscriptionRow, 'created_at'> & { createdBy: string },
): Promise<SubscriptionRow> {
  return (await queryFirst<SubscriptionRow>(
    m,
    `INSERT INTO run_callback_subscriptions
       (id, workspace_id, execution_id, url, events, secret_sealed, principal, description, created_by, format,
        receiver_auth_sealed)
     VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11) RETURNING ${SUBSCRIPTION_COLUMNS}`,
    [
      row.id,
      row.workspace_id,
      row.execution_id,
      row.url,
      row.events,
      row.secret_sealed,
      JSON.stringify(row.principal),
      row.description,
      row.createdBy,
      row.format,
      row.receiver_auth_sealed,
    ],
  ))!;
}

/** A standing subscription (not a dispatch's own) of this workspace. */
export const findStanding = (m: EntityManager, id: string) =>
  queryFirst<SubscriptionRow>(
    m,
    `SELECT ${SUBSCRIPTION_COLUMNS} FROM run_callback_subscriptions WHERE id = $1 AND execution_id IS NULL`,
    [id],
  );

export const listStanding = (m: EntityManager) =>
  queryRows<SubscriptionRow>(
    m,
    `SELECT ${SUBSCRIPTION_COLUMNS} FROM run_callback_subscriptions WHERE execution_id IS NULL
     ORDER BY created_at DESC, id DESC`,
  );

/** A run's own subscriptions (a dispatch's callback, A2A's push configs), newest first; `id` narrows to one. */
export const listOfRun = (m: EntityManager, executionId: string, id?: string) =>
  queryRows<SubscriptionRow>(
    m,
    `SELECT ${SUBSCRIPTION_COLUMNS} FROM run_callback_subscriptions
     WHERE execution_id = $1 AND ($2::uuid IS NULL OR id = $2) ORDER BY created_at DESC, id DESC`,
    [executionId, id ?? null],
  );

export const deleteSubscription = async (m: EntityManager, id: string) =>
  (await affectedRows(m, `DELETE FROM run_callback_subscriptions WHERE id = $1`, [id])) > 0;

/**
 * One event for every subscription that asked for it (the run's own and the workspace's standing
 * ones) in one statement; a repeated event (same `event_key`) adds nothing. The new deliveries' ids.
 */
export const insertDeliveries = (
  m: EntityManager,
  event: { executionId: string; eventId: string; key: string; type: CallbackEventType; body: string },
) =>
  queryRows<{ id: string; workspace_id: string }>(
    m,
    `INSERT INTO run_callback_deliveries (workspace_id, subscription_id, execution_id, event_id, event_key,
       event_type, body)
     SELECT s.workspace_id, s.id, $1, $2, $3, $4, $5 FROM run_callback_subscriptions s
     WHERE (s.execution_id = $1 OR s.execution_id IS NULL) AND $4 = ANY (s.events)
     ON CONFLICT (subscription_id, event_key) DO NOTHING
     RETURNING id, workspace_id`,
    [event.executionId, event.eventId, event.key, event.type, event.body],
  );

export interface DeliveryRow {
  id: string;
  subscription_id: string;
  execution_id: string;
  event_id: string;
  event_type: CallbackEventType;
  body: string;
  status: 'pending' | 'delivered' | 'failed' | 'stopped';
  attempts: number;
  series: number;
  created_at: Date;
  series_started_at: Date;
  last_attempt_at: Date | null;
  delivered_at: Date | null;
  /** Its subscription's body format (how `body` is posted). */
  format: CallbackFormat;
}

export interface AttemptRow {
  delivery_id: string;
  attempt_no: number;
  started_at: Date;
  latency_ms: number | null;
  outcome: 'succeeded' | 'failed' | 'refused' | 'credential_revoked';
  response_code: number | null;
  response_body: string | null;
  error: string | null;
}

const DELIVERY_COLUMNS = `d.id, d.subscription_id, d.execution_id, d.event_id, d.event_type, d.body, d.status,
  d.attempts, d.series, d.created_at, d.series_started_at, d.last_attempt_at, d.delivered_at, s.format`;

/** A delivery with its subscription, locked when `lock`: an attempt's and a redelivery's view. */
export const findDelivery = (m: EntityManager, id: string, lock = false) =>
  queryFirst<DeliveryRow & { subscription: SubscriptionRow }>(
    m,
    `SELECT ${DELIVERY_COLUMNS}, to_jsonb(s) AS subscription
     FROM run_callback_deliveries d JOIN run_callback_subscriptions s ON s.id = d.subscription_id
     WHERE d.id = $1 ${lock ? 'FOR UPDATE OF d' : ''}`,
    [id],
  );

/** Newest first; `after` is the last delivery of the previous page. By subscription, or by run (its own callbacks). */
export const listDeliveries = (
  m: EntityManager,
  by: { subscriptionId: string } | { executionId: string },
  limit: number,
  after?: string,
) =>
  queryRows<DeliveryRow>(
    m,
    `SELECT ${DELIVERY_COLUMNS} FROM run_callback_deliveries d
     JOIN run_callback_subscriptions s ON s.id = d.subscription_id
     WHERE ${'subscriptionId' in by ? 'd.subscription_id = $1' : 's.execution_id = $1'}
       AND ($3::uuid IS NULL OR (d.created_at, d.id) < (SELECT created_at, id FROM run_callback_deliveries
         WHERE id = $3))
     ORDER BY d.created_at DESC, d.id DESC LIMIT $2`,
    ['subscriptionId' in by ? by.subscriptionId : by.executionId, limit, after ?? null],
  );

export const attemptsOf = (m: EntityManager, deliveryIds: readonly string[]) =>
  queryRows<AttemptRow>(
    m,
    `SELECT delivery_id, attempt_no, started_at, latency_ms, outcome, response_code, response_body, error
     FROM run_callback_attempts WHERE delivery_id = ANY ($1::uuid[]) ORDER BY delivery_id, attempt_no`,
    [deliveryIds],
  );

/** Records an attempt and the delivery's new status (the delivery row is locked by the caller). */
export async function recordAttempt(
  m: EntityManager,
  delivery: { id: string; workspaceId: string },
  attempt: Omit<AttemptRow, 'delivery_id' | 'attempt_no'>,
  status: DeliveryRow['status'],
): Promise<void> {
  await affectedRows(
    m,
    `WITH bumped AS (
       UPDATE run_callback_deliveries SET attempts = attempts + 1, status = $9, last_attempt_at = $3,
         delivered_at = CASE WHEN $9 = 'delivered' THEN now() ELSE delivered_at END
       WHERE id = $1 RETURNING attempts)
     INSERT INTO run_callback_attempts (workspace_id, delivery_id, attempt_no, started_at, latency_ms, outcome,
       response_code, response_body, error)
     SELECT $2, $1, attempts, $3, $4, $5, $6, $7, $8 FROM bumped`,
    [
      delivery.id,
      delivery.workspaceId,
      attempt.started_at,
      attempt.latency_ms,
      attempt.outcome,
      attempt.response_code,
      attempt.response_body,
      attempt.error,
      status,
    ],
  );
}

/** Attempts of the delivery's current series so far: the backoff's exponent. */
export const seriesAttempts = async (m: EntityManager, id: string): Promise<number> =>
  (
    await queryFirst<{ n: number }>(
      m,
      `SELECT count(*)::int AS n FROM run_callback_attempts a JOIN run_callback_deliveries d ON d.id = a.delivery_id
       WHERE d.id = $1 AND a.started_at >= d.series_started_at`,
      [id],
    )
  )?.n ?? 0;

/** A new series: pending again, its backoff and window from now. The new series number. */
export const startSeries = async (m: EntityManager, id: string): Promise<number> =>
  (await queryFirst<{ series: number }>(
    m,
    `UPDATE run_callback_deliveries SET series = series + 1, status = 'pending', series_started_at = now()
       WHERE id = $1 RETURNING series`,
    [id],
  ))!.series;

/** Holds the delivery row for the rest of the transaction (one attempt's record at a time). */
export const lockDelivery = (m: EntityManager, id: string) =>
  queryFirst(m, `SELECT id FROM run_callback_deliveries WHERE id = $1 FOR UPDATE`, [id]);

/** Deletes up to `batchSize` settled deliveries older than `days` in every workspace; the count deleted. */
export async function purgeDeliveries(m: EntityManager, days: number, batchSize: number): Promise<number> {
  const row = await queryFirst<{ n: number }>(
    m,
    `SELECT weft_purge_run_callback_deliveries(make_interval(days => $1), $2) AS n`,
    [days, batchSize],
  );
  return row?.n ?? 0;
}

/** Whether the run is one of the transaction's workspace's (RLS hides the others). */
export const runExists = async (m: EntityManager, executionId: string): Promise<boolean> =>
  (await queryFirst<{ id: string }>(m, `SELECT id FROM run_executions WHERE id = $1`, [executionId])) !== undefined;
