import type { EntityManager } from 'typeorm';
import type { FilterResult } from '../filters/filter';
import { affectedRows, queryFirst, queryRows } from '../platform/db/query';
import type { ScopedRead, Statement } from '../platform/db/unit-of-work';
import type { RunTemplate } from '../runs/schemas';
import type { TriggerPrincipal } from './entities';
import { WebhookDelivery, WebhookTrigger } from './entities';
import type { SignatureScheme } from './schemes';

const triggers = (m: EntityManager) => m.getRepository(WebhookTrigger);
const deliveries = (m: EntityManager) => m.getRepository(WebhookDelivery);

export interface NewTrigger {
  id: string;
  workspaceId: string;
  slug: string;
  enabled: boolean;
  secretSealed: string;
  signatureScheme: SignatureScheme;
  filterExpression: string | null;
  runTemplate: RunTemplate;
  principal: TriggerPrincipal;
  createdBy: string;
}

/** Inserts the trigger, or nothing when its slug is taken in any workspace (the unique index sees them all). */
export async function insertTrigger(m: EntityManager, row: NewTrigger): Promise<boolean> {
  const inserted = await queryFirst<{ id: string }>(
    m,
    `INSERT INTO webhook_triggers
       (id, workspace_id, slug, enabled, secret_sealed, filter_expression, run_template, principal, created_by,
        signature_scheme)
     VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10)
     ON CONFLICT (slug) DO NOTHING RETURNING id`,
    [
      row.id,
      row.workspaceId,
      row.slug,
      row.enabled,
      row.secretSealed,
      row.filterExpression,
      JSON.stringify(row.runTemplate),
      JSON.stringify(row.principal),
      row.createdBy,
      row.signatureScheme,
    ],
  );
  return inserted !== undefined;
}

export const findTrigger = (m: EntityManager, id: string) => triggers(m).findOneBy({ id });

export const listTriggers = (m: EntityManager) => triggers(m).find({ order: { createdAt: 'DESC', id: 'DESC' } });

export interface TriggerChanges {
  enabled?: boolean;
  filterExpression?: string | null;
  runTemplate?: RunTemplate;
  /** The credential the trigger's runs act as from now on (a PATCH of its run or secret). */
  principal?: TriggerPrincipal;
  /** A rotation: the new sealed secret; the current one becomes the previous until the grace ends. */
  rotation?: { secretSealed: string; graceHours: number };
  signatureScheme?: SignatureScheme;
}

export async function updateTrigger(m: EntityManager, id: string, changes: TriggerChanges): Promise<void> {
  await affectedRows(
    m,
    `UPDATE webhook_triggers SET
       enabled = coalesce($2, enabled),
       filter_expression = CASE WHEN $3 THEN $4 ELSE filter_expression END,
       run_template = coalesce($5::jsonb, run_template),
       previous_secret_sealed = CASE WHEN $6::text IS NULL THEN previous_secret_sealed ELSE secret_sealed END,
       previous_secret_expires_at = CASE WHEN $6::text IS NULL THEN previous_secret_expires_at
         ELSE now() + make_interval(hours => $7) END,
       secret_rotated_at = CASE WHEN $6::text IS NULL THEN secret_rotated_at ELSE now() END,
       secret_sealed = coalesce($6, secret_sealed),
       principal = coalesce($8::jsonb, principal),
       signature_scheme = coalesce($9, signature_scheme),
       suspended_reason = CASE WHEN $2 THEN NULL ELSE suspended_reason END,
       suspended_at = CASE WHEN $2 THEN NULL ELSE suspended_at END,
       updated_at = now()
     WHERE id = $1`,
    [
      id,
      changes.enabled ?? null,
      changes.filterExpression !== undefined,
      changes.filterExpression ?? null,
      changes.runTemplate ? JSON.stringify(changes.runTemplate) : null,
      changes.rotation?.secretSealed ?? null,
      changes.rotation?.graceHours ?? 0,
      changes.principal ? JSON.stringify(changes.principal) : null,
      changes.signatureScheme ?? null,
    ],
  );
}

/** Deletes the trigger and (cascade) its delivery records; false when it is not in this workspace. */
export const deleteTrigger = async (m: EntityManager, id: string): Promise<boolean> =>
  (await affectedRows(m, `DELETE FROM webhook_triggers WHERE id = $1`, [id])) > 0;

/**
 * What the intake needs before it knows the workspace, from the one definer function past RLS
 * (migrations 1763780009000, 1763780009450): an enabled slug's ids, its revision and its sealed
 * secrets. The revision lets the intake tell whether its cached configuration is current.
 */
export interface SlugTarget {
  trigger_id: string;
  workspace_id: string;
  /** bigint, as text: bumped by the database on every update of the trigger. */
  revision: string;
  secret_sealed: string;
  previous_secret_sealed: string | null;
  signature_scheme: SignatureScheme;
}

/**
 * One round trip, no transaction and no scope: the function is its own scope. Called directly
 * rather than through weft_scoped_read, which would add a dynamic EXECUTE and a JSON round of every row.
 */
export const triggerForSlug = async (statement: Statement, slug: string): Promise<SlugTarget | undefined> =>
  (
    await statement<SlugTarget>(
      `SELECT trigger_id, workspace_id, revision::text AS revision, secret_sealed, previous_secret_sealed,
         signature_scheme
       FROM weft_webhook_trigger_for_slug($1::text)`,
      [slug],
    )
  )[0];

export interface NewDelivery {
  /** Chosen by the caller when it must name the record before writing it (a redelivery's run key). */
  id?: string;
  workspaceId: string;
  triggerId: string;
  headers: [string, string][];
  body: Buffer | null;
  statusCode: number;
  reason: string | null;
  filterResult?: FilterResult | null;
  filterError?: string | null;
  idempotencyKey?: string | null;
  executionId?: string | null;
  duplicateOf?: string | null;
  redeliveryOf?: string | null;
  /** The size and SHA-256 (hex) of the whole body received, also when only a prefix is kept. */
  bodySize?: number | null;
  bodySha256?: string | null;
  /** The `t` a verified, accepted original was signed at: one original per (t, body) and trigger. */
  signedT?: number | null;
}

const DELIVERY_INSERT = `INSERT INTO webhook_deliveries (workspace_id, trigger_id, headers, body, status_code, reason,
    filter_result, filter_error, idempotency_key, execution_id, duplicate_of, redelivery_of, id, body_size,
    body_sha256, signed_t)
  VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, coalesce($13::uuid, gen_random_uuid()), $14, $15, $16)`;

const deliveryParams = (row: NewDelivery) => [
  row.workspaceId,
  row.triggerId,
  JSON.stringify(row.headers),
  row.body,
  row.statusCode,
  row.reason,
  row.filterResult ?? null,
  row.filterError ?? null,
  row.idempotencyKey ?? null,
  row.executionId ?? null,
  row.duplicateOf ?? null,
  row.redeliveryOf ?? null,
  row.id ?? null,
  row.bodySize ?? null,
  row.bodySha256 ?? null,
  row.signedT ?? null,
];

export async function insertDelivery(m: EntityManager, row: NewDelivery): Promise<string> {
  const inserted = await queryFirst<{ id: string }>(m, `${DELIVERY_INSERT} RETURNING id`, deliveryParams(row));
  return inserted!.id;
}

/**
 * Inserts an accepted original, or nothing when its idempotency key or its signed request (`t` and
 * body) already has one: either partial unique index (ON CONFLICT waits for a concurrent holder to
 * commit). Null when taken.
 */
export async function insertOriginal(m: EntityManager, row: NewDelivery): Promise<string | null> {
  const inserted = await queryFirst<{ id: string }>(m, `${DELIVERY_INSERT} ON CONFLICT DO NOTHING RETURNING id`, [
    ...deliveryParams(row),
  ]);
  return inserted?.id ?? null;
}

/**
 * One delivery record in one round trip, outside any transaction: `weft_record_webhook_delivery`
 * scopes its own statement to the workspace (RLS applies; the policy's check holds the row to it).
 */
export async function recordDelivery(
  statement: Statement,
  row: Omit<NewDelivery, 'id' | 'executionId' | 'duplicateOf' | 'redeliveryOf'>,
): Promise<{ id: string; duplicate_of: string | null; execution_id: string | null }> {
  const [recorded] = await statement<{ id: string; duplicate_of: string | null; execution_id: string | null }>(
    `SELECT id, duplicate_of, execution_id
     FROM weft_record_webhook_delivery($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12)`,
    [
      row.workspaceId,
      row.triggerId,
      JSON.stringify(row.headers),
      row.body,
      row.statusCode,
      row.reason,
      row.filterResult ?? null,
      row.filterError ?? null,
      row.idempotencyKey ?? null,
      row.bodySize ?? null,
      row.bodySha256 ?? null,
      row.signedT ?? null,
    ],
  );
  return recorded!;
}

/** What the intake reads of its trigger once verified, in one scoped statement. */
export interface IntakeTrigger {
  id: string;
  /** The revision this configuration was read at (see SlugTarget). */
  revision: string;
  workspaceId: string;
  slug: string;
  filterExpression: string | null;
  runTemplate: RunTemplate;
  principal: TriggerPrincipal;
}

export async function intakeTrigger(
  read: ScopedRead,
  workspaceId: string,
  id: string,
): Promise<IntakeTrigger | undefined> {
  const [row] = await read<{
    id: string;
    revision: string;
    slug: string;
    filter_expression: string | null;
    run_template: RunTemplate;
    principal: TriggerPrincipal;
  }>(
    { workspaceId },
    `SELECT id, revision::text AS revision, slug, filter_expression, run_template, principal
     FROM webhook_triggers WHERE id = $1::uuid`,
    [id],
  );
  if (!row) return undefined;
  return {
    id: row.id,
    revision: row.revision,
    workspaceId,
    slug: row.slug,
    filterExpression: row.filter_expression,
    runTemplate: row.run_template,
    principal: row.principal,
  };
}

/** The accepted original of a key, or of the same signed request (`t` and body) under any key. */
export const findOriginal = (
  m: EntityManager,
  triggerId: string,
  match: { idempotencyKey: string | null; signedT: number | null; bodySha256: string },
) =>
  queryFirst<{ id: string; execution_id: string | null }>(
    m,
    `SELECT id, execution_id FROM webhook_deliveries
     WHERE trigger_id = $1 AND duplicate_of IS NULL AND status_code = 202 AND redelivery_of IS NULL
       AND (idempotency_key = $2 OR (signed_t = $3 AND body_sha256 = $4))
     ORDER BY received_at LIMIT 1`,
    [triggerId, match.idempotencyKey, match.signedT, match.bodySha256],
  );

/** The run a delivery dispatched, or why none was. */
export async function setDeliveryOutcome(
  m: EntityManager,
  id: string,
  outcome: { executionId: string | null; reason: string | null },
): Promise<void> {
  await affectedRows(m, `UPDATE webhook_deliveries SET execution_id = $2, reason = $3 WHERE id = $1`, [
    id,
    outcome.executionId,
    outcome.reason,
  ]);
}

export const findDelivery = (m: EntityManager, triggerId: string, id: string) =>
  deliveries(m).findOneBy({ triggerId, id });

/** Newest first; `after` is the last delivery of the previous page. */
export function listDeliveries(m: EntityManager, triggerId: string, limit: number, after?: string) {
  return queryRows<{
    id: string;
    status_code: number;
    reason: string | null;
    execution_id: string | null;
    received_at: Date;
    filter_result: FilterResult | null;
    duplicate_of: string | null;
    redelivery_of: string | null;
  }>(
    m,
    `SELECT id, status_code, reason, execution_id, received_at, filter_result, duplicate_of, redelivery_of
     FROM webhook_deliveries d
     WHERE trigger_id = $1
       AND ($3::uuid IS NULL OR (received_at, id) < (SELECT received_at, id FROM webhook_deliveries WHERE id = $3))
     ORDER BY received_at DESC, id DESC LIMIT $2`,
    [triggerId, limit, after ?? null],
  );
}

/** Adds rate-limit refusals to the triggers with these slugs, in one statement (unknown slugs: nothing). */
export async function countRefusals(statement: Statement, counts: ReadonlyMap<string, number>): Promise<void> {
  await statement(`SELECT weft_count_webhook_refusals($1::text[], $2::integer[])`, [
    [...counts.keys()],
    [...counts.values()],
  ]);
}

/** Deletes up to `batchSize` records older than `days` in every workspace; the count deleted. */
export async function purgeDeliveries(m: EntityManager, days: number, batchSize: number): Promise<number> {
  const row = await queryFirst<{ n: number }>(
    m,
    `SELECT weft_purge_webhook_deliveries(make_interval(days => $1), $2) AS n`,
    [days, batchSize],
  );
  return row?.n ?? 0;
}

/**
 * Suspends an enabled trigger (issue 43 item 3): disabled, with why. False when it was already
 * disabled (another process suspended it first, or its owner did).
 */
export const suspendTrigger = async (m: EntityManager, id: string, reason: string): Promise<boolean> =>
  (await affectedRows(
    m,
    `UPDATE webhook_triggers SET enabled = false, suspended_reason = $2, suspended_at = now(), updated_at = now()
      WHERE id = $1 AND enabled`,
    [id, reason],
  )) > 0;
