import type { EntityManager } from 'typeorm';
import type { EdgeRow, NodeRow } from '../graph/schemas';
import { EDGE_COLUMNS, NODE_COLUMNS } from '../graph/schemas';
import { affectedRows, queryFirst, queryRows } from '../platform/db/query';
import type { PromptRunStatus } from './entities';
import { PromptWrite } from './entities';
import type { ContextEdge, Intent } from './model/contract';

// Every function runs in the caller's unit of work, so row-level security scopes it to one workspace.

// ---- what a prompt wrote (prompt_writes) ----

export const findPromptWrites = (m: EntityManager, workspaceId: string, correlationId: string) =>
  m.getRepository(PromptWrite).findOneBy({ workspaceId, correlationId });

export async function insertPromptWrites(
  m: EntityManager,
  values: Pick<PromptWrite, 'workspaceId' | 'correlationId' | 'nodeIds' | 'edgeIds' | 'referenceDeltas'>,
): Promise<void> {
  await m.getRepository(PromptWrite).insert(values);
}

export interface UndoneWrites {
  node_ids: string[];
  edge_ids: string[];
  reference_deltas: Record<string, number>;
}

/**
 * Marks a prompt's writes undone and returns them, or nothing when there were none or another call
 * undid them first. Raw SQL: the conditional `UPDATE … RETURNING` claims the undo exactly once.
 */
export const claimPromptWritesUndo = (m: EntityManager, correlationId: string) =>
  queryFirst<UndoneWrites>(
    m,
    `UPDATE prompt_writes SET undone_at = now() WHERE correlation_id = $1 AND undone_at IS NULL
     RETURNING node_ids, edge_ids, reference_deltas`,
    [correlationId],
  );

// ---- the graph as a prompt reads and writes it ----
// Raw SQL below: the graph's own column lists and expressions (see src/graph/schemas.ts), which
// have no entity; the name match uses the same normalisation as the persist step.

/** Nodes by id, in the order given (deleted ones included: a replay shows what was written). */
export const nodesInOrder = (m: EntityManager, ids: readonly string[]) =>
  queryRows<NodeRow>(
    m,
    `SELECT ${NODE_COLUMNS} FROM nodes n WHERE n.id = ANY($1::uuid[]) ORDER BY array_position($1::uuid[], n.id)`,
    [ids],
  );

export const edgesInOrder = (m: EntityManager, ids: readonly string[]) =>
  queryRows<EdgeRow>(
    m,
    `SELECT ${EDGE_COLUMNS} FROM edges e WHERE e.id = ANY($1::uuid[]) ORDER BY array_position($1::uuid[], e.id)`,
    [ids],
  );

/** The oldest live node of this type whose name, trimmed, spaced and lower-cased, is `normalized`. */
export const findLiveNodeByName = (m: EntityManager, type: string, normalized: string) =>
  queryFirst<{ id: string }>(
    m,
    `SELECT id FROM nodes
     WHERE NOT is_deleted AND type = $1 AND lower(regexp_replace(btrim(name), '\\s+', ' ', 'g')) = $2
     ORDER BY created_at LIMIT 1`,
    [type, normalized],
  );

export const findLiveEdge = (m: EntityManager, type: string, sourceId: string, targetId: string) =>
  queryFirst<{ id: string }>(
    m,
    `SELECT id FROM edges WHERE NOT is_deleted AND type = $1 AND source_node_id = $2 AND target_node_id = $3 LIMIT 1`,
    [type, sourceId, targetId],
  );

/** Soft-deletes the given edges and every live edge incident to `nodeIds`. */
export const softDeleteEdges = (m: EntityManager, edgeIds: readonly string[], nodeIds: readonly string[]) =>
  affectedRows(
    m,
    `UPDATE edges SET is_deleted = true, deleted_at = now()
     WHERE NOT is_deleted
       AND (id = ANY($1::uuid[]) OR source_node_id = ANY($2::uuid[]) OR target_node_id = ANY($2::uuid[]))`,
    [edgeIds, nodeIds],
  );

export const softDeleteNodes = (m: EntityManager, nodeIds: readonly string[]) =>
  affectedRows(
    m,
    `UPDATE nodes SET is_deleted = true, deleted_at = now() WHERE id = ANY($1::uuid[]) AND NOT is_deleted`,
    [nodeIds],
  );

/** Takes back references: {node_id: count}, never below zero. */
export const takeBackReferences = (m: EntityManager, counts: Record<string, number>) =>
  affectedRows(
    m,
    `UPDATE nodes n SET reference_count = GREATEST(0, n.reference_count - d.count::int)
     FROM jsonb_each_text($1::jsonb) AS d(id, count) WHERE n.id = d.id::uuid`,
    [JSON.stringify(counts)],
  );

/** Live nodes whose names contain any of `words`, the best-matching first (answers' keyword half). */
export const nodesNamedLike = (m: EntityManager, workspaceId: string, words: readonly string[], limit: number) =>
  // A hot read path: the same transaction's raw query, no entity (architecture.md).
  queryRows<NodeRow & { matched: number }>(
    m,
    `SELECT ${NODE_COLUMNS},
       (SELECT count(*) FROM unnest($2::text[]) w WHERE n.name ILIKE '%' || w || '%')::int AS matched
     FROM nodes n
     WHERE n.workspace_id = $1 AND NOT n.is_deleted AND n.name ILIKE ANY (SELECT '%' || w || '%' FROM unnest($2::text[]) w)
     ORDER BY matched DESC, n.importance_score DESC, n.id
     LIMIT $3`,
    [workspaceId, words, limit],
  );

/** The live edges between the given nodes, for an answer's context. */
export const edgesAmong = (m: EntityManager, nodeIds: readonly string[], limit: number) =>
  queryRows<ContextEdge>(
    m,
    `SELECT type, source_node_id, target_node_id FROM edges
     WHERE NOT is_deleted AND source_node_id = ANY($1::uuid[]) AND target_node_id = ANY($1::uuid[]) LIMIT $2`,
    [nodeIds, limit],
  );

// ---- the audit (prompt_runs) ----

export interface PromptRunValues {
  workspaceId: string;
  correlationId: string;
  promptKind: string;
  sourceHash: string;
  intent: Intent;
  status: PromptRunStatus;
  nodeCount: number;
  edgeCount: number;
  creditsUsed: number;
  ledgerId: string | null;
  summary: string;
  errorCode: string | null;
  durationMs: number;
}

/**
 * Writes the audit row of a correlation id, once. Raw SQL: a conditional upsert, which the query
 * builder cannot say. Only a refusal that never reserved anything gives way (the client retried
 * after a 402); any other row of this correlation id is final. True when this call wrote it.
 */
export async function recordPromptRun(m: EntityManager, row: PromptRunValues): Promise<boolean> {
  const written = await queryRows<{ id: string }>(
    m,
    `INSERT INTO prompt_runs (workspace_id, correlation_id, prompt_kind, source_hash, intent, status, node_count,
       edge_count, credits_used, linked_credit_ledger_id, summary, error_code, duration_ms)
     VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13)
     ON CONFLICT (workspace_id, correlation_id) DO UPDATE SET
       prompt_kind = EXCLUDED.prompt_kind, source_hash = EXCLUDED.source_hash, intent = EXCLUDED.intent,
       status = EXCLUDED.status, node_count = EXCLUDED.node_count, edge_count = EXCLUDED.edge_count,
       credits_used = EXCLUDED.credits_used, linked_credit_ledger_id = EXCLUDED.linked_credit_ledger_id,
       summary = EXCLUDED.summary, error_code = EXCLUDED.error_code, duration_ms = EXCLUDED.duration_ms,
       created_at = now()
     WHERE prompt_runs.linked_credit_ledger_id IS NULL AND prompt_runs.status = 'error'
       AND EXCLUDED.linked_credit_ledger_id IS NOT NULL
     RETURNING id`,
    [
      row.workspaceId,
      row.correlationId,
      row.promptKind,
      row.sourceHash,
      row.intent,
      row.status,
      row.nodeCount,
      row.edgeCount,
      row.creditsUsed,
      row.ledgerId,
      row.summary,
      row.errorCode,
      row.durationMs,
    ],
  );
  return written.length > 0;
}

// ---- settlement (the reconciler) ----

export interface UnsettledReservation {
  ledger_id: string;
  idempotency_key: string;
  kind: string;
}

/**
 * Prompt reservations older than `minAgeSeconds` with neither a refund nor an ok audit row. Raw SQL:
 * anti-joins across the ledger and the audit.
 */
export const unsettledReservations = (m: EntityManager, minAgeSeconds: number) =>
  queryRows<UnsettledReservation>(
    m,
    `SELECT l.id AS ledger_id, l.idempotency_key, l.kind FROM credit_ledger l
     WHERE l.amount < 0 AND l.kind LIKE 'ontology.prompt.%' AND l.idempotency_key LIKE 'prompt-%:reserve'
       AND l.created_at <= now() - make_interval(secs => $1)
       AND NOT EXISTS (SELECT 1 FROM credit_ledger r WHERE r.linked_event_id = l.id AND r.amount > 0)
       AND NOT EXISTS (SELECT 1 FROM prompt_runs p WHERE p.linked_credit_ledger_id = l.id AND p.status = 'ok')
     ORDER BY l.created_at LIMIT 100`,
    [minAgeSeconds],
  );
