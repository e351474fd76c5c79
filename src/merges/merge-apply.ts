import type { EntityManager } from 'typeorm';
import { importanceSql, importanceSqlParams } from '../importance/formula';
import type { ImportanceSettings } from '../ontology-config/schemas';
import { affectedRows, queryFirst, queryRows } from '../platform/db/query';
import type { RecordedEdge } from './entities';
import { combineProperties } from './person-rules';

// The node and edge statements of one merge. Raw SQL: row locks in id order, set-based edge
// rewrites with window functions, and the importance formula's SQL twin.

export interface LockedNode {
  id: string;
  name: string;
  properties: Record<string, unknown>;
  reference_count: number;
  is_deleted: boolean;
}

/**
 * Both nodes, locked in id order so that concurrent merges cannot deadlock on them; undefined
 * when either is missing or soft-deleted.
 */
export async function lockLivePair(
  m: EntityManager,
  pair: { survivorId: string; duplicateId: string },
): Promise<{ survivor: LockedNode; duplicate: LockedNode } | undefined> {
  const nodes = await queryRows<LockedNode>(
    m,
    `SELECT id, name, properties, reference_count, is_deleted FROM nodes WHERE id = ANY($1::uuid[]) ORDER BY id
     FOR UPDATE`,
    [[pair.survivorId, pair.duplicateId]],
  );
  const survivor = nodes.find((node) => node.id === pair.survivorId && !node.is_deleted);
  const duplicate = nodes.find((node) => node.id === pair.duplicateId && !node.is_deleted);
  return survivor && duplicate ? { survivor, duplicate } : undefined;
}

export interface FoldedEdges {
  repointed: number;
  removed: number;
  /** The duplicate's edges before the merge, as the undo record keeps them. */
  repointedEdges: RecordedEdge[];
  removedEdges: RecordedEdge[];
}

/**
 * Moves the duplicate's edges to the survivor:
 * 1. edges between the two nodes are soft-deleted (they would become self-loops);
 * 2. an edge that would duplicate a live survivor edge (same type, same other end, direction
 *    kept), or another of the duplicate's edges once moved, is soft-deleted instead, oldest kept;
 * 3. every other edge of the duplicate is re-pointed to the survivor.
 * Answers the duplicate's edges as they were before, split by what happened to each.
 */
export async function foldEdges(
  m: EntityManager,
  input: { workspaceId: string; survivorId: string; duplicateId: string },
): Promise<FoldedEdges> {
  const params = [input.workspaceId, input.survivorId, input.duplicateId];
  const before = await queryRows<RecordedEdge>(
    m,
    `SELECT id, type, source_node_id, target_node_id, properties, reasoning, evidence,
            to_json(created_at) #>> '{}' AS created_at
     FROM edges WHERE workspace_id = $1 AND NOT is_deleted AND (source_node_id = $2 OR target_node_id = $2)
     ORDER BY created_at, id`,
    [input.workspaceId, input.duplicateId],
  );
  const between = await queryRows<{ id: string }>(
    m,
    `UPDATE edges SET is_deleted = true, deleted_at = now()
     WHERE workspace_id = $1 AND NOT is_deleted
       AND ((source_node_id = $2 AND target_node_id = $3) OR (source_node_id = $3 AND target_node_id = $2))
     RETURNING id`,
    params,
  );
  const duplicates = await queryRows<{ id: string }>(
    m,
    `WITH moved AS (
       SELECT e.id, e.type,
              CASE WHEN e.source_node_id = $3 THEN $2::uuid ELSE e.source_node_id END AS src,
              CASE WHEN e.target_node_id = $3 THEN $2::uuid ELSE e.target_node_id END AS tgt,
              row_number() OVER (
                PARTITION BY e.type, CASE WHEN e.source_node_id = $3 THEN $2::uuid ELSE e.source_node_id END,
                             CASE WHEN e.target_node_id = $3 THEN $2::uuid ELSE e.target_node_id END
                ORDER BY e.created_at, e.id) AS rank
       FROM edges e
       WHERE e.workspace_id = $1 AND NOT e.is_deleted AND (e.source_node_id = $3 OR e.target_node_id = $3)
     )
     UPDATE edges e SET is_deleted = true, deleted_at = now()
     FROM moved
     WHERE e.id = moved.id AND (moved.rank > 1 OR EXISTS (
       SELECT 1 FROM edges o
       WHERE o.workspace_id = $1 AND NOT o.is_deleted AND o.type = moved.type
         AND o.source_node_id = moved.src AND o.target_node_id = moved.tgt))
     RETURNING e.id`,
    params,
  );
  const repointed = await queryRows<{ id: string }>(
    m,
    `UPDATE edges SET source_node_id = CASE WHEN source_node_id = $3 THEN $2::uuid ELSE source_node_id END,
                      target_node_id = CASE WHEN target_node_id = $3 THEN $2::uuid ELSE target_node_id END
     WHERE workspace_id = $1 AND NOT is_deleted AND (source_node_id = $3 OR target_node_id = $3)
     RETURNING id`,
    params,
  );
  const removedIds = new Set([...between, ...duplicates].map((row) => row.id));
  const repointedIds = new Set(repointed.map((row) => row.id));
  return {
    repointed: repointed.length,
    removed: removedIds.size,
    repointedEdges: before.filter((edge) => repointedIds.has(edge.id)),
    removedEdges: before.filter((edge) => removedIds.has(edge.id)),
  };
}

/**
 * The survivor gets the combined properties (`combineProperties`), the sum of both reference
 * counts, the later last_touch_at and its importance recomputed from those; the duplicate is
 * soft-deleted. Answers the survivor's combined properties.
 */
export async function foldNodes(
  m: EntityManager,
  input: { survivor: LockedNode; duplicate: LockedNode; importance: ImportanceSettings },
): Promise<Record<string, unknown>> {
  const { survivor, duplicate } = input;
  const combined = combineProperties(survivor, duplicate);
  await affectedRows(
    m,
    `UPDATE nodes n SET
       properties = $2,
       reference_count = n.reference_count + $3,
       last_touch_at = GREATEST(n.last_touch_at, d.last_touch_at),
       importance_score = ${importanceSql(5, {
         referenceCount: '(n.reference_count + $3)',
         lastTouchAt: 'GREATEST(n.last_touch_at, d.last_touch_at)',
       })},
       updated_at = now()
     FROM nodes d
     WHERE n.id = $1 AND d.id = $4`,
    [
      survivor.id,
      JSON.stringify(combined),
      duplicate.reference_count,
      duplicate.id,
      ...importanceSqlParams(input.importance),
    ],
  );
  await affectedRows(m, `UPDATE nodes SET is_deleted = true, deleted_at = now(), updated_at = now() WHERE id = $1`, [
    duplicate.id,
  ]);
  return combined;
}

/** The transaction's time to the microsecond (ISO 8601): what now() wrote into every row the merge touched. */
export async function transactionTime(m: EntityManager): Promise<string> {
  const row = await queryFirst<{ now: string }>(m, `SELECT to_json(now()) #>> '{}' AS now`);
  if (!row) throw new Error('now() answered nothing');
  return row.now;
}
