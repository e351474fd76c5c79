import type { EntityManager } from 'typeorm';
import type { EdgeRow, NodeRow } from '../graph/repository';
import { EDGE_COLUMNS, NODE_COLUMNS } from '../graph/repository';
import { affectedRows, queryFirst, queryRows } from '../platform/db/query';
import type { FailureDetails } from '../platform/temporal/failures';
import { Workspace } from '../tenancy/entities';
import type { PromptRunStatus } from './entities';
import { PromptRun, PromptWrite } from './entities';
import type { Intent } from './model/contract';

// Every function runs in the caller's unit of work, so row-level security scopes it to one workspace.

// ---- what a prompt wrote (prompt_writes) ----

export const findPromptWrites = (m: EntityManager, workspaceId: string, correlationId: string) =>
  m.getRepository(PromptWrite).findOneBy({ workspaceId, correlationId });

export async function insertPromptWrites(
  m: EntityManager,
  values: Pick<
    PromptWrite,
    'workspaceId' | 'correlationId' | 'nodeIds' | 'edgeIds' | 'referenceDeltas' | 'createdReferences'
  >,
): Promise<void> {
  await m.getRepository(PromptWrite).insert(values);
}

export interface UndoneWrites {
  node_ids: string[];
  edge_ids: string[];
  reference_deltas: Record<string, number>;
  created_references: Record<string, number>;
}

/**
 * Marks a prompt's writes undone and returns them, or nothing when there were none or another call
 * undid them first. Raw SQL: the conditional `UPDATE … RETURNING` claims the undo exactly once.
 */
export const claimPromptWritesUndo = (m: EntityManager, correlationId: string) =>
  queryFirst<UndoneWrites>(
    m,
    `UPDATE prompt_writes SET undone_at = now() WHERE correlation_id = $1 AND undone_at IS NULL
     RETURNING node_ids, edge_ids, reference_deltas, created_references`,
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

/** Reference counts of nodes, as a persist leaves them. */
export async function referenceCounts(m: EntityManager, nodeIds: readonly string[]): Promise<Record<string, number>> {
  const rows = await queryRows<{ id: string; reference_count: number }>(
    m,
    `SELECT id, reference_count FROM nodes WHERE id = ANY($1::uuid[])`,
    [nodeIds],
  );
  return Object.fromEntries(rows.map((row) => [row.id, row.reference_count]));
}

/** The live ones among `nodeIds`, with what a `node.created` event carries. */
export const liveNodes = (m: EntityManager, nodeIds: readonly string[]) =>
  queryRows<{ id: string; type: string; name: string }>(
    m,
    `SELECT id, type, name FROM nodes WHERE id = ANY($1::uuid[]) AND NOT is_deleted
     ORDER BY array_position($1::uuid[], id)`,
    [nodeIds],
  );

export const softDeleteEdges = (m: EntityManager, edgeIds: readonly string[]) =>
  affectedRows(
    m,
    `UPDATE edges SET is_deleted = true, deleted_at = now() WHERE id = ANY($1::uuid[]) AND NOT is_deleted`,
    [edgeIds],
  );

/**
 * Soft-deletes the nodes of `created` ({node_id: reference count as its prompt left it, or null
 * when unknown}) that nobody else has touched since the prompt wrote them: no more references
 * than it left, no live edge (its own are deleted first), no edit since its persist committed.
 * Returns the deleted ids.
 */
export async function softDeleteUntouchedNodes(
  m: EntityManager,
  created: Record<string, number | null>,
  correlationId: string,
): Promise<string[]> {
  const rows = await queryRows<{ id: string }>(
    m,
    `UPDATE nodes n SET is_deleted = true, deleted_at = now()
     FROM jsonb_each_text($1::jsonb) AS c(id, refs)
     WHERE n.id = c.id::uuid AND NOT n.is_deleted
       AND (c.refs IS NULL OR n.reference_count <= c.refs::int)
       AND n.updated_at <= (SELECT w.created_at FROM prompt_writes w WHERE w.correlation_id = $2)
       AND NOT EXISTS (SELECT 1 FROM edges e
                       WHERE NOT e.is_deleted AND (e.source_node_id = n.id OR e.target_node_id = n.id))
     RETURNING n.id`,
    [JSON.stringify(created), correlationId],
  );
  return rows.map((row) => row.id);
}

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
     WHERE n.workspace_id = $1 AND NOT n.is_deleted AND n.name ILIKE ANY (SELECT '%' || w || '%'
       FROM unnest($2::text[]) w)
     ORDER BY matched DESC, n.importance_score DESC, n.id
     LIMIT $3`,
    [workspaceId, words, limit],
  );

// ---- the audit (prompt_runs) ----

export const findPromptRun = (m: EntityManager, workspaceId: string, correlationId: string) =>
  m.getRepository(PromptRun).findOneBy({ workspaceId, correlationId });

/** The status and stored failure code of the workspace's runs under any of `correlationIds`. */
export const findPromptRunOutcomes = (m: EntityManager, correlationIds: readonly string[]) =>
  queryRows<{ correlation_id: string; status: PromptRunStatus; failure_code: string | null }>(
    m,
    `SELECT correlation_id, status, failure->>'code' AS failure_code FROM prompt_runs
     WHERE workspace_id = weft_current_workspace() AND correlation_id = ANY ($1::uuid[])`,
    [correlationIds],
  );

export interface PromptRunClaim {
  workspaceId: string;
  correlationId: string;
  promptKind: string;
  sourceHash: string;
  requestHash: string;
  intent: Intent;
  /**
   * The id is derived from the caller's own unit of work (a run's step), so a `running` claim with
   * the same request is an earlier attempt of this very call, dead or overtaken: it is taken over.
   */
  reclaim?: boolean;
}

/**
 * Claims a correlation id for one request: a `running` row, before anything runs. Raw SQL: a
 * conditional upsert, which the query builder cannot say. Only a refusal that never reserved
 * anything gives way (the client may retry after a 402); true when this call holds the claim.
 */
export async function claimPromptRun(m: EntityManager, claim: PromptRunClaim): Promise<boolean> {
  const claimed = await queryRows<{ id: string }>(
    m,
    `INSERT INTO prompt_runs (workspace_id, correlation_id, prompt_kind, source_hash, request_hash, intent, status)
     VALUES ($1, $2, $3, $4, $5, $6, 'running')
     ON CONFLICT (workspace_id, correlation_id) DO UPDATE SET
       prompt_kind = EXCLUDED.prompt_kind, source_hash = EXCLUDED.source_hash, request_hash = EXCLUDED.request_hash,
       intent = EXCLUDED.intent, status = 'running', node_count = 0, edge_count = 0, credits_used = 0, summary = '',
       error_code = NULL, duration_ms = 0, answer = NULL, citations = NULL, failure = NULL, created_at = now()
     WHERE (prompt_runs.status = 'error' AND prompt_runs.linked_credit_ledger_id IS NULL)
       OR ($7 AND prompt_runs.status = 'running' AND prompt_runs.request_hash = EXCLUDED.request_hash)
     RETURNING id`,
    [
      claim.workspaceId,
      claim.correlationId,
      claim.promptKind,
      claim.sourceHash,
      claim.requestHash,
      claim.intent,
      claim.reclaim ?? false,
    ],
  );
  return claimed.length > 0;
}

/** Records the reservation on the running claim, so the audit links it from the start. */
export async function linkReservation(m: EntityManager, correlationId: string, ledgerId: string): Promise<void> {
  await m.getRepository(PromptRun).update({ correlationId, status: 'running' }, { linkedCreditLedgerId: ledgerId });
}

export interface PromptRunValues {
  workspaceId: string;
  correlationId: string;
  promptKind: string;
  sourceHash: string;
  requestHash: string | null;
  intent: Intent;
  status: Exclude<PromptRunStatus, 'running'>;
  nodeCount: number;
  edgeCount: number;
  creditsUsed: number;
  ledgerId: string | null;
  summary: string;
  errorCode: string | null;
  durationMs: number;
  answer: string | null;
  citations: string[] | null;
  failure: FailureDetails | null;
}

/**
 * Settles the audit row of a correlation id, once: the running claim (or, for a run nobody
 * claimed, a new row) becomes ok or error. Raw SQL: a conditional upsert. A settled row is final,
 * except a refusal that never reserved anything, which gives way to a run that did. True when
 * this call wrote it.
 */
export async function recordPromptRun(m: EntityManager, row: PromptRunValues): Promise<boolean> {
  const written = await queryRows<{ id: string }>(
    m,
    `INSERT INTO prompt_runs (workspace_id, correlation_id, prompt_kind, source_hash, request_hash, intent, status,
       node_count, edge_count, credits_used, linked_credit_ledger_id, summary, error_code, duration_ms,
       answer, citations, failure)
     VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14, $15, $16, $17)
     ON CONFLICT (workspace_id, correlation_id) DO UPDATE SET
       prompt_kind = EXCLUDED.prompt_kind, source_hash = EXCLUDED.source_hash,
       request_hash = coalesce(prompt_runs.request_hash, EXCLUDED.request_hash), intent = EXCLUDED.intent,
       status = EXCLUDED.status, node_count = EXCLUDED.node_count, edge_count = EXCLUDED.edge_count,
       credits_used = EXCLUDED.credits_used,
       linked_credit_ledger_id = coalesce(EXCLUDED.linked_credit_ledger_id, prompt_runs.linked_credit_ledger_id),
       summary = EXCLUDED.summary, error_code = EXCLUDED.error_code, duration_ms = EXCLUDED.duration_ms,
       answer = EXCLUDED.answer, citations = EXCLUDED.citations, failure = EXCLUDED.failure
     WHERE prompt_runs.status = 'running'
       OR (prompt_runs.status = 'error' AND prompt_runs.linked_credit_ledger_id IS NULL
           AND EXCLUDED.linked_credit_ledger_id IS NOT NULL)
     RETURNING id`,
    [
      row.workspaceId,
      row.correlationId,
      row.promptKind,
      row.sourceHash,
      row.requestHash,
      row.intent,
      row.status,
      row.nodeCount,
      row.edgeCount,
      row.creditsUsed,
      row.ledgerId,
      row.summary,
      row.errorCode,
      row.durationMs,
      row.answer,
      row.citations,
      row.failure === null ? null : JSON.stringify(row.failure),
    ],
  );
  return written.length > 0;
}

// ---- settlement ----

export interface LockedReservation {
  id: string;
  refunded: boolean;
  /** An ok audit row holds it: the charge stands. */
  completed: boolean;
}

/**
 * Locks a reservation's ledger row for the rest of the transaction and says where it stands.
 * Completing a prompt and settling an abandoned one both take this lock first, so neither can
 * act on what the other is changing. Raw SQL: a row lock.
 */
export const lockReservation = (m: EntityManager, ledgerId: string) =>
  queryFirst<LockedReservation>(
    m,
    `SELECT l.id,
       EXISTS (SELECT 1 FROM credit_ledger r WHERE r.linked_event_id = l.id AND r.amount > 0) AS refunded,
       EXISTS (SELECT 1 FROM prompt_runs p WHERE p.linked_credit_ledger_id = l.id AND p.status = 'ok') AS completed
     FROM credit_ledger l WHERE l.id = $1 FOR UPDATE OF l`,
    [ledgerId],
  );

export interface UnsettledPrompt {
  correlation_id: string;
  /** The reservation, or null for a claim that reserved nothing. */
  ledger_id: string | null;
  /** A stream's reservation (`stream-<correlation_id>:reserve`): no workflow runs it. */
  streamed: boolean;
  prompt_kind: string;
  source_hash: string;
  request_hash: string | null;
  intent: Intent;
  created_at: Date;
}

/**
 * What may need settling, older than `minAgeSeconds`: prompt and stream reservations with neither
 * a refund nor an ok audit row, and claims still running without one. Raw SQL: anti-joins across
 * the ledger and the audit, and the correlation id read out of the reservation's key.
 */
export const unsettledPrompts = (m: EntityManager, minAgeSeconds: number, limit: number) =>
  queryRows<UnsettledPrompt>(
    m,
    `WITH reserved AS (
       SELECT l.id AS ledger_id, l.kind, l.created_at,
         substring(l.idempotency_key FROM '^(?:prompt|stream)-([0-9a-f-]{36}):reserve$')::uuid AS correlation_id,
         l.idempotency_key LIKE 'stream-%' AS streamed
       FROM credit_ledger l
       WHERE l.amount < 0 AND l.kind LIKE 'ontology.prompt.%'
         AND substring(l.idempotency_key FROM '^(?:prompt|stream)-([0-9a-f-]{36}):reserve$') IS NOT NULL
         AND l.created_at <= now() - make_interval(secs => $1)
         AND NOT EXISTS (SELECT 1 FROM credit_ledger r WHERE r.linked_event_id = l.id AND r.amount > 0)
         AND NOT EXISTS (SELECT 1 FROM prompt_runs p WHERE p.linked_credit_ledger_id = l.id AND p.status = 'ok')
     )
     SELECT r.correlation_id, r.ledger_id, r.streamed,
       coalesce(p.prompt_kind, CASE WHEN r.streamed THEN 'stream' ELSE 'unknown' END) AS prompt_kind,
       -- What the workflow knew of a prompt nobody claimed did not survive it; the hash of nothing marks that.
       coalesce(p.source_hash, encode(sha256(''::bytea), 'hex')) AS source_hash, p.request_hash,
       coalesce(p.intent, split_part(r.kind, '.', 3)) AS intent, coalesce(p.created_at, r.created_at) AS created_at
     FROM reserved r LEFT JOIN prompt_runs p ON p.correlation_id = r.correlation_id
     UNION ALL
     -- Claims still running without an unsettled reservation: none was made, or it was refunded
     -- but the failure never recorded.
     SELECT p.correlation_id, p.linked_credit_ledger_id, false, p.prompt_kind, p.source_hash, p.request_hash,
       p.intent, p.created_at
     FROM prompt_runs p
     WHERE p.status = 'running' AND p.created_at <= now() - make_interval(secs => $1)
       AND NOT EXISTS (SELECT 1 FROM reserved r WHERE r.correlation_id = p.correlation_id)
     ORDER BY created_at LIMIT $2`,
    [minAgeSeconds, limit],
  );

export async function tenantOfWorkspace(m: EntityManager, workspaceId: string): Promise<string | undefined> {
  const workspace = await m.getRepository(Workspace).findOneBy({ id: workspaceId });
  return workspace?.tenantId;
}
