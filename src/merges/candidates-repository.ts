import type { EntityManager } from 'typeorm';
import { iso } from '../platform/dates';
import { queryFirst, queryRows } from '../platform/db/query';
import type { CandidateStatus } from './entities';
import { MergeCandidate } from './entities';
import type { MatchReason, PairEvidence } from './person-rules';
import type { MergeCandidate as CandidateResponse } from './schemas';

// Every statement runs in the caller's unit of work, so row-level security scopes it to one workspace.

/** A candidate with a summary of both its nodes, as the queue and a decision's answer show it. */
interface CandidateRow {
  id: string;
  status: CandidateStatus;
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

// Raw SQL: the queue's read joins both nodes' summaries in one statement (nodes have no entity here).
const CANDIDATE_SELECT = `
  SELECT c.id, c.status, c.match_reasons, c.confidence_score::float8 AS confidence_score,
         c.survivor_node_id, c.duplicate_node_id, c.created_at, c.updated_at, c.resolved_at,
         s.type AS s_type, s.name AS s_name, s.properties AS s_properties,
         d.type AS d_type, d.name AS d_name, d.properties AS d_properties
  FROM merge_candidates c
  JOIN nodes s ON s.workspace_id = c.workspace_id AND s.id = c.survivor_node_id
  JOIN nodes d ON d.workspace_id = c.workspace_id AND d.id = c.duplicate_node_id`;

const toCandidate = (row: CandidateRow): CandidateResponse => ({
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

/** Pending candidates whose two nodes are both still live, newest first. */
export async function listPendingCandidates(
  m: EntityManager,
  page: { limit: number; offset: number },
): Promise<CandidateResponse[]> {
  const rows = await queryRows<CandidateRow>(
    m,
    `${CANDIDATE_SELECT}
     WHERE c.workspace_id = weft_current_workspace() AND c.status = 'pending' AND NOT s.is_deleted AND NOT d.is_deleted
     ORDER BY c.created_at DESC, c.id DESC
     LIMIT $1 OFFSET $2`,
    [page.limit, page.offset],
  );
  return rows.map(toCandidate);
}

/** Candidates of one resolved status (applied, say), latest resolution first. */
export async function listResolvedCandidates(
  m: EntityManager,
  query: { status: Exclude<CandidateStatus, 'pending'>; limit: number; offset: number },
): Promise<CandidateResponse[]> {
  const rows = await queryRows<CandidateRow>(
    m,
    `${CANDIDATE_SELECT}
     WHERE c.workspace_id = weft_current_workspace() AND c.status = $1
     ORDER BY c.resolved_at DESC NULLS LAST, c.id DESC
     LIMIT $2 OFFSET $3`,
    [query.status, query.limit, query.offset],
  );
  return rows.map(toCandidate);
}

export async function findCandidateResponse(
  m: EntityManager,
  candidateId: string,
): Promise<CandidateResponse | undefined> {
  const row = await queryFirst<CandidateRow>(m, `${CANDIDATE_SELECT} WHERE c.id = $1`, [candidateId]);
  return row && toCandidate(row);
}

export async function candidateStatus(m: EntityManager, candidateId: string): Promise<CandidateStatus | null> {
  const row = await m.getRepository(MergeCandidate).findOne({ select: { status: true }, where: { id: candidateId } });
  return row?.status ?? null;
}

/** The candidate, locked until the transaction ends: decisions on one candidate run one at a time. */
export function lockCandidate(m: EntityManager, candidateId: string): Promise<MergeCandidate | null> {
  return m.getRepository(MergeCandidate).findOne({ where: { id: candidateId }, lock: { mode: 'pessimistic_write' } });
}

export async function resolveCandidate(
  m: EntityManager,
  candidateId: string,
  status: Exclude<CandidateStatus, 'pending'>,
): Promise<void> {
  await m
    .getRepository(MergeCandidate)
    .update({ id: candidateId }, { status, resolvedAt: () => 'now()', updatedAt: () => 'now()' });
}

/**
 * Supersedes the candidate if it is still pending (one of its nodes is gone); a candidate resolved
 * meanwhile keeps its resolution. Answers whether it changed it.
 */
export async function supersedeIfPending(m: EntityManager, candidateId: string): Promise<boolean> {
  const result = await m
    .getRepository(MergeCandidate)
    .update(
      { id: candidateId, status: 'pending' },
      { status: 'superseded', resolvedAt: () => 'now()', updatedAt: () => 'now()' },
    );
  return (result.affected ?? 0) > 0;
}

/** Supersedes every other pending candidate that names `nodeId` (merged away); answers their ids. */
export async function supersedeCandidatesOf(
  m: EntityManager,
  input: { workspaceId: string; nodeId: string; exceptCandidateId: string },
): Promise<string[]> {
  // Raw SQL: the ids of a multi-row UPDATE come back through RETURNING.
  const rows = await queryRows<{ id: string }>(
    m,
    `UPDATE merge_candidates SET status = 'superseded', resolved_at = now(), updated_at = now()
     WHERE workspace_id = $1 AND status = 'pending' AND id <> $2
       AND (survivor_node_id = $3 OR duplicate_node_id = $3)
     RETURNING id`,
    [input.workspaceId, input.exceptCandidateId, input.nodeId],
  );
  return rows.map((row) => row.id);
}

/**
 * Inserts the candidate for this pair, or refreshes its reasons and score while it is still
 * pending. A pair that was ever resolved (rejected, applied, superseded) is left alone and
 * yields nothing: the unique pair index makes "never proposed again" hold for good. An unmerged
 * candidate is outside that index, so a pair whose merge was undone gets a new candidate: the
 * resolver asks only when the pair's evidence has changed since (`unmergedEvidenceFor`).
 */
export async function upsertCandidate(
  m: EntityManager,
  input: { workspaceId: string; survivorId: string; duplicateId: string; reasons: MatchReason[]; score: number },
): Promise<{ id: string; inserted: boolean } | undefined> {
  // Raw SQL: the conflict target is the unordered-pair expression index, and the update is conditional.
  return queryFirst<{ id: string; inserted: boolean }>(
    m,
    `INSERT INTO merge_candidates (workspace_id, survivor_node_id, duplicate_node_id, match_reasons, confidence_score)
     VALUES ($1, $2, $3, $4, $5)
     ON CONFLICT (workspace_id, LEAST(survivor_node_id, duplicate_node_id),
       GREATEST(survivor_node_id, duplicate_node_id)) WHERE status <> 'unmerged'
     DO UPDATE SET match_reasons = EXCLUDED.match_reasons, confidence_score = EXCLUDED.confidence_score,
       updated_at = now()
       WHERE merge_candidates.status = 'pending'
     RETURNING id, (xmax = 0) AS inserted`,
    [input.workspaceId, input.survivorId, input.duplicateId, input.reasons, input.score],
  );
}

/** Whether both nodes of the candidate are still live (a deleted node leaves nothing to merge). */
export async function pairIsLive(m: EntityManager, candidate: MergeCandidate): Promise<boolean> {
  const row = await queryFirst<{ live: number }>(
    m,
    `SELECT count(*)::int AS live FROM nodes WHERE id = ANY($1::uuid[]) AND NOT is_deleted`,
    [[candidate.survivorNodeId, candidate.duplicateNodeId]],
  );
  return row?.live === 2;
}

/**
 * For each node paired with `nodeId` by an undone merge, the evidence the pair had when it was
 * undone (the latest such merge's).
 */
export async function unmergedEvidenceFor(m: EntityManager, nodeId: string): Promise<Map<string, PairEvidence>> {
  const rows = await queryRows<{ other_id: string; evidence: PairEvidence }>(
    m,
    `SELECT DISTINCT ON (other_id) other_id, evidence FROM (
       SELECT CASE WHEN survivor_node_id = $1 THEN duplicate_node_id ELSE survivor_node_id END AS other_id,
              unmerged_evidence AS evidence, updated_at
       FROM merge_candidates
       WHERE status = 'unmerged' AND unmerged_evidence IS NOT NULL
         AND (survivor_node_id = $1 OR duplicate_node_id = $1)
     ) undone
     ORDER BY other_id, updated_at DESC`,
    [nodeId],
  );
  return new Map(rows.map((row) => [row.other_id, row.evidence]));
}

/** The candidate's merge was undone: it leaves the pair index, keeping the evidence it had. */
export async function markUnmerged(m: EntityManager, candidateId: string, evidence: PairEvidence): Promise<void> {
  await m
    .getRepository(MergeCandidate)
    .update({ id: candidateId }, { status: 'unmerged', unmergedEvidence: evidence, updatedAt: () => 'now()' });
}
