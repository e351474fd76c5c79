import type { EntityManager } from 'typeorm';
import type { NodeRow } from '../graph/repository';
import { NODE_COLUMNS, toNodeResponse } from '../graph/repository';
import { importanceSql, importanceSqlParams } from '../importance/formula';
import type { ImportanceSettings } from '../ontology-config/schemas';
import type { MatchReason } from './person-rules';
import { combineProperties } from './person-rules';
import type { MergeAction, MergeCandidate, MergeSummary } from './schemas';
import type { DecisionOutcome } from './types';

// Every statement runs in the caller's unit of work, so row-level security scopes it to one workspace.

/** TypeORM answers UPDATE … RETURNING with [rows, count] and INSERT … RETURNING with rows. */
const rowsOf = <T>(result: unknown): T[] => {
  const value = result as unknown[];
  return (Array.isArray(value[0]) ? value[0] : value) as T[];
};

const iso = (value: Date | string) => (value instanceof Date ? value : new Date(value)).toISOString();

interface CandidateRow {
  id: string;
  status: MergeCandidate['status'];
  match_reasons: MatchReason[];
  confidence_score: number;
  survivor_node_id: string;
  duplicate_node_id: string;
  created_at: Date;
  updated_at: Date;
  resolved_at: Date | null;
  s_type: string;
  s_name: string;
  s_properties: Record<string, unknown>;
  d_type: string;
  d_name: string;
  d_properties: Record<string, unknown>;
}

const CANDIDATE_SELECT = `
  SELECT c.id, c.status, c.match_reasons, c.confidence_score::float8 AS confidence_score,
         c.survivor_node_id, c.duplicate_node_id, c.created_at, c.updated_at, c.resolved_at,
         s.type AS s_type, s.name AS s_name, s.properties AS s_properties,
         d.type AS d_type, d.name AS d_name, d.properties AS d_properties
  FROM merge_candidates c
  JOIN nodes s ON s.workspace_id = c.workspace_id AND s.id = c.survivor_node_id
  JOIN nodes d ON d.workspace_id = c.workspace_id AND d.id = c.duplicate_node_id`;

const toCandidate = (row: CandidateRow): MergeCandidate => ({
  id: row.id,
  status: row.status,
  match_reasons: row.match_reasons,
  confidence_score: row.confidence_score,
  survivor_node_id: row.survivor_node_id,
  duplicate_node_id: row.duplicate_node_id,
  survivor_node: { id: row.survivor_node_id, type: row.s_type, name: row.s_name, properties: row.s_properties },
  duplicate_node: { id: row.duplicate_node_id, type: row.d_type, name: row.d_name, properties: row.d_properties },
  created_at: iso(row.created_at),
  updated_at: iso(row.updated_at),
  resolved_at: row.resolved_at ? iso(row.resolved_at) : null,
});

interface ActionRow {
  id: string;
  candidate_id: string;
  action: 'merged' | 'rejected';
  performed_by: string | null;
  notes: string | null;
  details: { edges_repointed?: number; edges_removed?: number; superseded_candidate_ids?: string[] };
  created_at: Date;
}

const ACTION_COLUMNS = `id, candidate_id, action, performed_by, notes, details, created_at`;

const toAction = (row: ActionRow): MergeAction => ({
  id: row.id,
  candidate_id: row.candidate_id,
  action: row.action,
  performed_by: row.performed_by,
  notes: row.notes,
  created_at: iso(row.created_at),
});

/** Pending candidates whose two nodes are both still live, newest first. */
export async function listPendingCandidates(
  m: EntityManager,
  page: { limit: number; offset: number },
): Promise<MergeCandidate[]> {
  const rows: CandidateRow[] = await m.query(
    `${CANDIDATE_SELECT}
     WHERE c.workspace_id = weft_current_workspace() AND c.status = 'pending' AND NOT s.is_deleted AND NOT d.is_deleted
     ORDER BY c.created_at DESC, c.id DESC
     LIMIT $1 OFFSET $2`,
    [page.limit, page.offset],
  );
  return rows.map(toCandidate);
}

export async function findCandidate(m: EntityManager, candidateId: string): Promise<MergeCandidate | undefined> {
  const [row]: CandidateRow[] = await m.query(`${CANDIDATE_SELECT} WHERE c.id = $1`, [candidateId]);
  return row ? toCandidate(row) : undefined;
}

export async function candidateStatus(m: EntityManager, candidateId: string): Promise<MergeCandidate['status'] | null> {
  const [row] = await m.query(`SELECT status FROM merge_candidates WHERE id = $1`, [candidateId]);
  return row?.status ?? null;
}

// ---------------------------------------------------------------------------------------------
// Resolver

export interface PersonNode {
  id: string;
  created_at: Date;
  is_person: boolean;
  name_key: string | null;
  email_key: string | null;
}

export async function loadLiveNodeKeys(m: EntityManager, nodeId: string): Promise<PersonNode | undefined> {
  const [row]: PersonNode[] = await m.query(
    `SELECT id, created_at, weft_is_person_type(type) AS is_person,
            weft_person_name_key(name) AS name_key, weft_person_email_key(properties) AS email_key
     FROM nodes WHERE id = $1 AND NOT is_deleted`,
    [nodeId],
  );
  return row;
}

export interface PersonMatch {
  id: string;
  created_at: Date;
  email: boolean;
  name: boolean;
}

/**
 * Live people of the workspace sharing the email key or the name key, strongest first. The
 * predicates repeat the partial indexes' expressions so both indexes serve the OR.
 */
export async function findMatchingPeople(
  m: EntityManager,
  input: { workspaceId: string; node: PersonNode; limit: number },
): Promise<PersonMatch[]> {
  return m.query(
    `SELECT id, created_at, email, name FROM (
       SELECT n.id, n.created_at,
              coalesce(weft_person_email_key(n.properties) = $3, false) AS email,
              coalesce(weft_person_name_key(n.name) = $4, false) AS name
       FROM nodes n
       WHERE n.workspace_id = $1 AND NOT n.is_deleted AND weft_is_person_type(n.type) AND n.id <> $2
         AND (weft_person_email_key(n.properties) = $3 OR weft_person_name_key(n.name) = $4)
     ) matches
     ORDER BY email DESC, name DESC, created_at, id
     LIMIT $5`,
    [input.workspaceId, input.node.id, input.node.email_key, input.node.name_key, input.limit],
  );
}

/**
 * Inserts the candidate for this pair, or refreshes its reasons and score while it is still
 * pending. A pair that was ever resolved (rejected, applied, superseded) is left alone and
 * yields nothing: the unique pair index makes "never proposed again" hold for good.
 */
export async function upsertCandidate(
  m: EntityManager,
  input: { workspaceId: string; survivorId: string; duplicateId: string; reasons: MatchReason[]; score: number },
): Promise<{ id: string; inserted: boolean } | undefined> {
  const [row] = await m.query(
    `INSERT INTO merge_candidates (workspace_id, survivor_node_id, duplicate_node_id, match_reasons, confidence_score)
     VALUES ($1, $2, $3, $4, $5)
     ON CONFLICT (workspace_id, LEAST(survivor_node_id, duplicate_node_id), GREATEST(survivor_node_id, duplicate_node_id))
     DO UPDATE SET match_reasons = EXCLUDED.match_reasons, confidence_score = EXCLUDED.confidence_score, updated_at = now()
       WHERE merge_candidates.status = 'pending'
     RETURNING id, (xmax = 0) AS inserted`,
    [input.workspaceId, input.survivorId, input.duplicateId, input.reasons, input.score],
  );
  return row;
}

export async function tenantOfWorkspace(m: EntityManager, workspaceId: string): Promise<string> {
  const [row] = await m.query(`SELECT tenant_id FROM workspaces WHERE id = $1`, [workspaceId]);
  return row.tenant_id;
}

// ---------------------------------------------------------------------------------------------
// Decisions

interface LockedCandidate {
  id: string;
  workspace_id: string;
  status: MergeCandidate['status'];
  survivor_node_id: string;
  duplicate_node_id: string;
}

async function lockCandidate(m: EntityManager, candidateId: string): Promise<LockedCandidate | undefined> {
  const [row] = await m.query(
    `SELECT id, workspace_id, status, survivor_node_id, duplicate_node_id FROM merge_candidates WHERE id = $1 FOR UPDATE`,
    [candidateId],
  );
  return row;
}

async function resolveCandidate(m: EntityManager, candidateId: string, status: 'applied' | 'rejected' | 'superseded') {
  await m.query(`UPDATE merge_candidates SET status = $2, resolved_at = now(), updated_at = now() WHERE id = $1`, [
    candidateId,
    status,
  ]);
}

async function insertAction(
  m: EntityManager,
  input: {
    candidate: LockedCandidate;
    action: 'merged' | 'rejected';
    performedBy: string | null;
    notes: string | null;
    details?: Record<string, unknown>;
  },
): Promise<ActionRow> {
  const [row]: ActionRow[] = await m.query(
    `INSERT INTO merge_actions (workspace_id, candidate_id, action, survivor_node_id, duplicate_node_id, performed_by, notes, details)
     VALUES ($1, $2, $3, $4, $5, $6, $7, $8)
     RETURNING ${ACTION_COLUMNS}`,
    [
      input.candidate.workspace_id,
      input.candidate.id,
      input.action,
      input.candidate.survivor_node_id,
      input.candidate.duplicate_node_id,
      input.performedBy,
      input.notes,
      JSON.stringify(input.details ?? {}),
    ],
  );
  return row!;
}

async function loadNodeResponse(m: EntityManager, nodeId: string) {
  const [row]: NodeRow[] = await m.query(`SELECT ${NODE_COLUMNS} FROM nodes n WHERE n.id = $1`, [nodeId]);
  return toNodeResponse(row!);
}

async function summaryOf(m: EntityManager, candidate: LockedCandidate, action: ActionRow): Promise<MergeSummary> {
  return {
    survivor: await loadNodeResponse(m, candidate.survivor_node_id),
    duplicate_node_id: candidate.duplicate_node_id,
    edges_repointed: action.details.edges_repointed ?? 0,
    edges_removed: action.details.edges_removed ?? 0,
    superseded_candidate_ids: action.details.superseded_candidate_ids ?? [],
  };
}

/**
 * A candidate that is no longer pending. If it was resolved exactly as asked, by the same
 * performer, this is a retried activity whose first attempt committed: answer as that attempt
 * would have. Anything else is a conflict.
 */
async function replayOrConflict(
  m: EntityManager,
  candidate: LockedCandidate,
  wanted: 'merged' | 'rejected',
  performedBy: string | null,
): Promise<DecisionOutcome> {
  const [action]: ActionRow[] = await m.query(`SELECT ${ACTION_COLUMNS} FROM merge_actions WHERE candidate_id = $1`, [
    candidate.id,
  ]);
  if (action && action.action === wanted && action.performed_by === performedBy) {
    return {
      ok: true,
      response: {
        candidate: (await findCandidate(m, candidate.id))!,
        action: toAction(action),
        merge: wanted === 'merged' ? await summaryOf(m, candidate, action) : null,
      },
    };
  }
  return { ok: false, code: 'conflict', detail: `Merge candidate is already ${candidate.status}` };
}

export async function rejectCandidate(
  m: EntityManager,
  input: { candidateId: string; performedBy: string; notes: string | null },
): Promise<DecisionOutcome> {
  const candidate = await lockCandidate(m, input.candidateId);
  if (!candidate) return { ok: false, code: 'not_found', detail: 'Merge candidate not found' };
  if (candidate.status !== 'pending') return replayOrConflict(m, candidate, 'rejected', input.performedBy);
  await resolveCandidate(m, candidate.id, 'rejected');
  const action = await insertAction(m, {
    candidate,
    action: 'rejected',
    performedBy: input.performedBy,
    notes: input.notes,
  });
  return {
    ok: true,
    response: { candidate: (await findCandidate(m, candidate.id))!, action: toAction(action), merge: null },
  };
}

interface LockedNode {
  id: string;
  name: string;
  properties: Record<string, unknown>;
  reference_count: number;
  is_deleted: boolean;
}

/**
 * The merge, in the caller's transaction (contract 3: "merge runs in the same transaction"):
 * 1. both nodes are locked (in id order, so concurrent merges cannot deadlock on them) and must
 *    be live, otherwise the candidate is superseded and the caller gets a conflict;
 * 2. edges between the two nodes are soft-deleted (they would become self-loops);
 * 3. each edge of the duplicate is re-pointed to the survivor, unless the survivor already has a
 *    live edge of the same type with the same other end (direction kept), or another of the
 *    duplicate's edges becomes that same edge: those are soft-deleted instead, oldest kept;
 * 4. the survivor gets the combined properties (`combineProperties`), the sum of both reference
 *    counts, the later last_touch_at, and its importance recomputed from those;
 * 5. the duplicate is soft-deleted, the candidate applied, every other pending candidate naming
 *    the duplicate superseded, and the action row written.
 */
export async function mergeCandidate(
  m: EntityManager,
  input: { candidateId: string; performedBy: string | null; notes: string | null; importance: ImportanceSettings },
): Promise<DecisionOutcome> {
  const candidate = await lockCandidate(m, input.candidateId);
  if (!candidate) return { ok: false, code: 'not_found', detail: 'Merge candidate not found' };
  if (candidate.status !== 'pending') return replayOrConflict(m, candidate, 'merged', input.performedBy);

  const { survivor_node_id: survivorId, duplicate_node_id: duplicateId, workspace_id: workspaceId } = candidate;
  const nodes: LockedNode[] = await m.query(
    `SELECT id, name, properties, reference_count, is_deleted FROM nodes WHERE id = ANY($1::uuid[]) ORDER BY id FOR UPDATE`,
    [[survivorId, duplicateId]],
  );
  const survivor = nodes.find((node) => node.id === survivorId);
  const duplicate = nodes.find((node) => node.id === duplicateId);
  if (!survivor || !duplicate || survivor.is_deleted || duplicate.is_deleted) {
    await resolveCandidate(m, candidate.id, 'superseded');
    return {
      ok: false,
      code: 'conflict',
      detail: 'A node of this pair is no longer live; the candidate is superseded',
    };
  }

  const between = rowsOf<{ id: string }>(
    await m.query(
      `UPDATE edges SET is_deleted = true, deleted_at = now()
       WHERE workspace_id = $1 AND NOT is_deleted
         AND ((source_node_id = $2 AND target_node_id = $3) OR (source_node_id = $3 AND target_node_id = $2))
       RETURNING id`,
      [workspaceId, survivorId, duplicateId],
    ),
  );
  const duplicates = rowsOf<{ id: string }>(
    await m.query(
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
      [workspaceId, survivorId, duplicateId],
    ),
  );
  const repointed = rowsOf<{ id: string }>(
    await m.query(
      `UPDATE edges SET source_node_id = CASE WHEN source_node_id = $3 THEN $2::uuid ELSE source_node_id END,
                        target_node_id = CASE WHEN target_node_id = $3 THEN $2::uuid ELSE target_node_id END
       WHERE workspace_id = $1 AND NOT is_deleted AND (source_node_id = $3 OR target_node_id = $3)
       RETURNING id`,
      [workspaceId, survivorId, duplicateId],
    ),
  );

  await m.query(
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
      survivorId,
      JSON.stringify(combineProperties(survivor, duplicate)),
      duplicate.reference_count,
      duplicateId,
      ...importanceSqlParams(input.importance),
    ],
  );
  await m.query(`UPDATE nodes SET is_deleted = true, deleted_at = now(), updated_at = now() WHERE id = $1`, [
    duplicateId,
  ]);

  await resolveCandidate(m, candidate.id, 'applied');
  const superseded = rowsOf<{ id: string }>(
    await m.query(
      `UPDATE merge_candidates SET status = 'superseded', resolved_at = now(), updated_at = now()
       WHERE workspace_id = $1 AND status = 'pending' AND id <> $2
         AND (survivor_node_id = $3 OR duplicate_node_id = $3)
       RETURNING id`,
      [workspaceId, candidate.id, duplicateId],
    ),
  ).map((row) => row.id);

  const action = await insertAction(m, {
    candidate,
    action: 'merged',
    performedBy: input.performedBy,
    notes: input.notes,
    details: {
      edges_repointed: repointed.length,
      edges_removed: between.length + duplicates.length,
      superseded_candidate_ids: superseded,
    },
  });
  return {
    ok: true,
    response: {
      candidate: (await findCandidate(m, candidate.id))!,
      action: toAction(action),
      merge: await summaryOf(m, candidate, action),
    },
  };
}
