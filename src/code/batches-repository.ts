import type { EntityManager } from 'typeorm';
import { queryFirst } from '../platform/db/query';
import type { CodeIngestRequest } from './schemas';
import type { CodeBatchResult } from './workflow';

/** Stores an ingest batch for its workflow (the unit of work's workspace, under RLS); answers its id. */
export async function insertCodeBatch(m: EntityManager, workspaceId: string, batch: CodeIngestRequest) {
  const [row]: { id: string }[] = await m.query(
    `INSERT INTO code_index_batches (workspace_id, repo, batch) VALUES ($1, $2, $3) RETURNING id`,
    [workspaceId, batch.repo, JSON.stringify(batch)],
  );
  return row!.id;
}

/** A batch its workflow never ran (the repository was busy): nothing should keep it. */
export async function deleteCodeBatch(m: EntityManager, id: string): Promise<void> {
  await m.query(`DELETE FROM code_index_batches WHERE id = $1`, [id]);
}

/**
 * The stored batch, locked for its apply; undefined when this workspace has no such row (a forged or
 * another workspace's id). `result` is set once it was applied.
 */
export async function lockCodeBatch(m: EntityManager, id: string) {
  const rows: { batch: CodeIngestRequest | null; result: CodeBatchResult | null }[] = await m.query(
    `SELECT batch, result FROM code_index_batches WHERE id = $1 FOR UPDATE`,
    [id],
  );
  return rows[0];
}

/** Keeps the result and drops the batch: applying it again answers the result. */
export async function markCodeBatchApplied(m: EntityManager, id: string, result: CodeBatchResult): Promise<void> {
  await m.query(`UPDATE code_index_batches SET batch = NULL, result = $2, applied_at = now() WHERE id = $1`, [
    id,
    JSON.stringify(result),
  ]);
}

/**
 * Deletes up to `batchSize` stored batches older than LIMITS.code.batchRetentionHours in every
 * workspace (a definer function, which holds the window); the count deleted.
 */
export async function purgeCodeBatches(m: EntityManager, batchSize: number): Promise<number> {
  const row = await queryFirst<{ purged: number }>(m, `SELECT weft_purge_code_index_batches($1) AS purged`, [
    batchSize,
  ]);
  return row?.purged ?? 0;
}
