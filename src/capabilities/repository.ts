import type { EntityManager } from 'typeorm';
import type { QueryDeepPartialEntity } from 'typeorm/query-builder/QueryPartialEntity';
import { queryFirst } from '../platform/db/query';
import type { Scope, ScopedRead } from '../platform/db/unit-of-work';
import { LIMITS } from '../rules/limits';
import { CapabilityIdempotencyKey } from './entities';

export interface StoredKey {
  tool: string;
  request_hash: string;
  envelope: unknown;
  /** Older than the replay window: the key is free to be used again. */
  expired: boolean;
}

/**
 * Takes the key for this transaction, or answers false at once when another call holds it. A
 * transaction-level advisory lock: released by the commit or rollback, never leaked.
 */
export async function tryLockKey(m: EntityManager, workspaceId: string, key: string): Promise<boolean> {
  const row = await queryFirst<{ locked: boolean }>(
    m,
    `SELECT pg_try_advisory_xact_lock(hashtextextended($1, 0)) AS locked`,
    [`capability-key:${workspaceId}:${key}`],
  );
  return row?.locked === true;
}

/** The key's stored first request, judged against the database clock. Raw SQL: the replay hot path. */
export const findKey = (m: EntityManager, key: string): Promise<StoredKey | undefined> =>
  queryFirst<StoredKey>(
    m,
    `SELECT tool, request_hash, envelope, created_at < now() - make_interval(hours => $2) AS expired
     FROM capability_idempotency_keys WHERE workspace_id = weft_current_workspace() AND idempotency_key = $1`,
    [key, LIMITS.idempotencyReplayHours],
  );

/**
 * findKey as one statement outside any transaction (a scoped read): how a retry of a finished call
 * finds its envelope without opening a transaction, taking the key's lock or reading it twice.
 */
export async function findKeyOutsideTransaction(read: ScopedRead, scope: Scope, key: string) {
  const [row] = await read<StoredKey>(
    scope,
    `SELECT tool, request_hash, envelope, created_at < now() - make_interval(hours => $2::int) AS expired
     FROM capability_idempotency_keys WHERE workspace_id = weft_current_workspace() AND idempotency_key = $1`,
    [key, LIMITS.idempotencyReplayHours],
  );
  return row;
}

export async function deleteKey(m: EntityManager, workspaceId: string, key: string): Promise<void> {
  await m.getRepository(CapabilityIdempotencyKey).delete({ workspaceId, idempotencyKey: key });
}

export async function storeKey(
  m: EntityManager,
  row: Pick<
    CapabilityIdempotencyKey,
    'workspaceId' | 'idempotencyKey' | 'tool' | 'requestHash' | 'envelope' | 'userId'
  >,
): Promise<void> {
  // TypeORM's deep-partial type cannot describe a free-form jsonb value; the column takes any JSON.
  await m.getRepository(CapabilityIdempotencyKey).insert(row as QueryDeepPartialEntity<CapabilityIdempotencyKey>);
}

/**
 * Deletes up to `batchSize` keys past the replay window in every workspace (a definer function,
 * which holds the window itself: LIMITS.idempotencyReplayHours, 24 h).
 */
export async function purgeExpiredKeys(m: EntityManager, batchSize: number): Promise<number> {
  const row = await queryFirst<{ purged: number }>(m, `SELECT weft_purge_idempotency_keys($1) AS purged`, [batchSize]);
  return row?.purged ?? 0;
}
