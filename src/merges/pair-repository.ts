import type { EntityManager } from 'typeorm';
import type { NodeRow } from '../graph/repository';
import { NODE_COLUMNS } from '../graph/repository';
import { importanceSql, importanceSqlParams } from '../importance/formula';
import type { ImportanceSettings } from '../ontology-config/schemas';
import { affectedRows, queryFirst, queryRows } from '../platform/db/query';
import type { RecordedEdge } from './entities';

// The node and edge statements of a merge (decisions.ts) and of its undo (unmerge-apply.ts). Raw SQL:
// row locks in id order, set-based edge rewrites with window functions or from the merge's record,
// and the importance formula's SQL twin.

/** The nodes as the graph answers them, in no particular order. */
export const findNodeRows = (m: EntityManager, ids: readonly string[]) =>
  queryRows<NodeRow>(m, `SELECT ${NODE_COLUMNS} FROM nodes n WHERE n.id = ANY($1::uuid[])`, [ids]);

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
 * The survivor gets `combined` (the merge's combined properties), the sum of both reference counts,
 * the later last_touch_at and its importance recomputed from those; the duplicate is soft-deleted.
 */
export async function foldNodeRows(
  m: EntityManager,
  input: {
    survivor: LockedNode;
    duplicate: LockedNode;
    combined: Record<string, unknown>;
    importance: ImportanceSettings;
  },
): Promise<void> {
  const { survivor, duplicate } = input;
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
      JSON.stringify(input.combined),
      duplicate.reference_count,
      duplicate.id,
      ...importanceSqlParams(input.importance),
    ],
  );
  await affectedRows(m, `UPDATE nodes SET is_deleted = true, deleted_at = now(), updated_at = now() WHERE id = $1`, [
    duplicate.id,
  ]);
}

/** The transaction's time to the microsecond (ISO 8601): what now() wrote into every row the merge touched. */
export async function transactionTime(m: EntityManager): Promise<string> {
  const row = await queryFirst<{ now: string }>(m, `SELECT to_json(now()) #>> '{}' AS now`);
  if (!row) throw new Error('now() answered nothing');
  return row.now;
}

// The undo's statements.

export interface EdgeLeft {
  id: string;
  type: string;
  source_node_id: string;
  target_node_id: string;
  created_at: string;
}

export interface PairRow {
  id: string;
  is_deleted: boolean;
  properties: Record<string, unknown>;
  changed_since: boolean;
  deleted_by_merge: boolean;
}

/**
 * Both nodes of an undone merge, locked in id order, with whether each was changed since the merge
 * (`merged_at`) and whether the merge is what deleted it.
 */
export const lockPairSince = (m: EntityManager, ids: [string, string], mergedAt: string) =>
  queryRows<PairRow>(
    m,
    `SELECT id, is_deleted, properties, updated_at > $2::timestamptz AS changed_since,
            coalesce(deleted_at = $2::timestamptz, false) AS deleted_by_merge
     FROM nodes WHERE id = ANY($1::uuid[]) ORDER BY id FOR UPDATE`,
    [ids, mergedAt],
  );

/** A soft-deleted node live again. */
export const reviveNode = (m: EntityManager, id: string) =>
  affectedRows(m, `UPDATE nodes SET is_deleted = false, deleted_at = NULL, updated_at = now() WHERE id = $1`, [id]);

/** The survivor with `properties`, the duplicate's references taken off, its importance recomputed. */
export const revertSurvivor = (
  m: EntityManager,
  input: {
    survivorId: string;
    duplicateId: string;
    properties: Record<string, unknown>;
    importance: ImportanceSettings;
  },
) =>
  affectedRows(
    m,
    `UPDATE nodes n SET
       properties = $2,
       reference_count = GREATEST(0, n.reference_count - d.reference_count),
       importance_score = ${importanceSql(4, { referenceCount: 'GREATEST(0, n.reference_count - d.reference_count)' })},
       updated_at = now()
     FROM nodes d
     WHERE n.id = $1 AND d.id = $3`,
    [input.survivorId, JSON.stringify(input.properties), input.duplicateId, ...importanceSqlParams(input.importance)],
  );

const edgeIds = (edges: RecordedEdge[]) =>
  JSON.stringify(
    edges.map(({ id, source_node_id, target_node_id }) => ({
      id,
      source_node_id,
      target_node_id,
    })),
  );

/** Re-pointed edges back to the duplicate, each only if still live where the merge put it; answers those moved. */
export const restoreRepointedEdges = (
  m: EntityManager,
  input: { workspaceId: string; survivorId: string; duplicateId: string; edges: RecordedEdge[] },
) =>
  queryRows<{ id: string }>(
    m,
    `WITH recorded AS (
       SELECT * FROM jsonb_to_recordset($4::jsonb) AS r(id uuid, source_node_id uuid, target_node_id uuid)
     )
     UPDATE edges e SET source_node_id = recorded.source_node_id, target_node_id = recorded.target_node_id
     FROM recorded
     WHERE e.id = recorded.id AND e.workspace_id = $1 AND NOT e.is_deleted
       AND e.source_node_id = CASE WHEN recorded.source_node_id = $3 THEN $2::uuid ELSE recorded.source_node_id END
       AND e.target_node_id = CASE WHEN recorded.target_node_id = $3 THEN $2::uuid ELSE recorded.target_node_id END
     RETURNING e.id`,
    [input.workspaceId, input.survivorId, input.duplicateId, edgeIds(input.edges)],
  );

/**
 * Edges the merge soft-deleted, live again if still as the merge left them and both ends live;
 * answers those revived.
 */
export const undeleteRemovedEdges = (
  m: EntityManager,
  input: { workspaceId: string; mergedAt: string; edges: RecordedEdge[] },
) =>
  queryRows<{ id: string }>(
    m,
    `WITH recorded AS (
       SELECT * FROM jsonb_to_recordset($3::jsonb) AS r(id uuid, source_node_id uuid, target_node_id uuid)
     )
     UPDATE edges e SET is_deleted = false, deleted_at = NULL
     FROM recorded
     WHERE e.id = recorded.id AND e.workspace_id = $1 AND e.is_deleted AND e.deleted_at = $2::timestamptz
       AND e.source_node_id = recorded.source_node_id AND e.target_node_id = recorded.target_node_id
       AND NOT EXISTS (SELECT 1 FROM nodes n WHERE n.id IN (e.source_node_id, e.target_node_id) AND n.is_deleted)
     RETURNING e.id`,
    [input.workspaceId, input.mergedAt, edgeIds(input.edges)],
  );

/** How recorded edges are now: deleted or not, and whether an end of each is deleted. */
export const edgeStates = (m: EntityManager, ids: string[]) =>
  queryRows<{ id: string; is_deleted: boolean; ends_deleted: boolean }>(
    m,
    `SELECT e.id, e.is_deleted,
            EXISTS (SELECT 1 FROM nodes n WHERE n.id IN (e.source_node_id, e.target_node_id) AND n.is_deleted)
              AS ends_deleted
     FROM edges e WHERE e.id = ANY($1::uuid[])`,
    [ids],
  );

/** The survivor's live edges created after `since`, oldest first, at most `limit`. */
export const edgesBuiltSince = (
  m: EntityManager,
  input: { workspaceId: string; survivorId: string; since: string; limit: number },
) =>
  queryRows<EdgeLeft>(
    m,
    `SELECT id, type, source_node_id, target_node_id, to_json(created_at) #>> '{}' AS created_at
     FROM edges
     WHERE workspace_id = $1 AND NOT is_deleted AND (source_node_id = $2 OR target_node_id = $2)
       AND created_at > $3::timestamptz
     ORDER BY created_at, id
     LIMIT $4`,
    [input.workspaceId, input.survivorId, input.since, input.limit],
  );
