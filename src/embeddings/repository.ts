import { toSql } from 'pgvector/pg';
import type { EntityManager } from 'typeorm';
import { affectedRows, queryRows } from '../platform/db/query';
import { Workspace } from '../tenancy/entities';

/**
 * The embedding pipeline's reads and writes of `nodes`. Raw SQL: nodes carry a pgvector column and
 * are batched by id arrays, which the query builder cannot say.
 */

/** The tenant that pays for a workspace's work, read inside the unit of work (never taken from input). */
export async function tenantOfWorkspace(m: EntityManager, workspaceId: string): Promise<string | undefined> {
  return (await m.getRepository(Workspace).findOneBy({ id: workspaceId }))?.tenantId;
}

/** Which of these nodes are live. */
export async function liveNodeIds(m: EntityManager, nodeIds: readonly string[]): Promise<string[]> {
  const rows = await queryRows<{ id: string }>(
    m,
    `SELECT id FROM nodes WHERE id = ANY($1::uuid[]) AND NOT is_deleted`,
    [nodeIds],
  );
  return rows.map((row) => row.id);
}

/** The current names of these live nodes. */
export const liveNodeNames = (m: EntityManager, nodeIds: readonly string[]) =>
  queryRows<{ id: string; name: string }>(
    m,
    `SELECT id, name FROM nodes WHERE id = ANY($1::uuid[]) AND NOT is_deleted`,
    [nodeIds],
  );

/**
 * Writes each vector only if the node still has the name that was embedded (a rename in between
 * has its own request). Returns the ids written.
 */
export async function writeEmbeddings(
  m: EntityManager,
  vectors: readonly { id: string; name: string; vector: number[] }[],
): Promise<string[]> {
  const rows = await queryRows<{ id: string }>(
    m,
    `UPDATE nodes n SET embedding = v.embedding::vector, embedding_error = NULL
     FROM unnest($1::uuid[], $2::text[], $3::text[]) AS v(id, name, embedding)
     WHERE n.id = v.id AND n.name = v.name AND NOT n.is_deleted
     RETURNING n.id`,
    [vectors.map((v) => v.id), vectors.map((v) => v.name), vectors.map((v) => toSql(v.vector))],
  );
  return rows.map((row) => row.id);
}

/** Says why these nodes have no vector; `onlyUnembedded` leaves a node that has one (an earlier name's) alone. */
export async function recordEmbeddingError(
  m: EntityManager,
  nodeIds: readonly string[],
  error: string,
  options: { onlyUnembedded?: boolean } = {},
): Promise<number> {
  if (nodeIds.length === 0) return 0;
  return affectedRows(
    m,
    `UPDATE nodes SET embedding_error = $2 WHERE id = ANY($1::uuid[]) ${options.onlyUnembedded ? 'AND embedding IS NULL' : ''}`,
    [nodeIds, error.slice(0, 500)],
  );
}
