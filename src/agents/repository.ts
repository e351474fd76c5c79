import type { EntityManager, FindOptionsWhere } from 'typeorm';
import { queryFirst, queryRows } from '../platform/db/query';
import type { SessionOutcome, SessionStatus } from './entities';
import { AgentClaim, AgentFailureCluster, AgentSession } from './entities';

/** The agent feature's SQL. Every function runs inside the caller's unit of work (RLS applies). */

// ---- sessions ----

export const insertSession = (
  m: EntityManager,
  row: { workspaceId: string; userId: string; name: string | null; metadata: Record<string, unknown> },
): Promise<AgentSession> => m.getRepository(AgentSession).save(m.getRepository(AgentSession).create(row));

export const findSession = (m: EntityManager, sessionId: string): Promise<AgentSession | null> =>
  m.getRepository(AgentSession).findOneBy({ id: sessionId });

/**
 * Reads the session and holds a share lock on it until the transaction ends, so that it cannot
 * end or expire while a claim is being made for it.
 */
export const findSessionForClaim = (m: EntityManager, sessionId: string): Promise<AgentSession | null> =>
  m
    .getRepository(AgentSession)
    .createQueryBuilder('s')
    .where('s.id = :sessionId', { sessionId })
    .setLock('pessimistic_read')
    .getOne();

export interface SessionState {
  id: string;
  status: SessionStatus;
  outcome: SessionOutcome | null;
  last_heartbeat_at: Date;
  ended_at: Date | null;
}

/**
 * Stamps the heartbeat of `userId`'s active session; undefined when there is no such session (gone,
 * another user's, or not active: a conditional update, whose caller then finds out which).
 */
export const stampHeartbeat = (
  m: EntityManager,
  sessionId: string,
  userId: string,
): Promise<SessionState | undefined> =>
  queryFirst<SessionState>(
    m,
    `UPDATE agent_sessions SET last_heartbeat_at = now() WHERE id = $1 AND user_id = $2 AND status = 'active'
     RETURNING id, status, outcome, last_heartbeat_at, ended_at`,
    [sessionId, userId],
  );

/** Ends an active session; undefined when it was no longer active (a conditional update). */
export const markSessionEnded = (
  m: EntityManager,
  input: { sessionId: string; outcome: SessionOutcome; errorSignature: string | null },
): Promise<SessionState | undefined> =>
  queryFirst<SessionState>(
    m,
    `UPDATE agent_sessions SET status = 'ended', outcome = $2, error_signature = $3, ended_at = now()
     WHERE id = $1 AND status = 'active'
     RETURNING id, status, outcome, last_heartbeat_at, ended_at`,
    [input.sessionId, input.outcome, input.errorSignature],
  );

/** Expires the transaction workspace's sessions whose last heartbeat is older than `ttlSeconds`. */
export async function expireStaleSessions(m: EntityManager, ttlSeconds: number): Promise<string[]> {
  const rows = await queryRows<{ id: string }>(
    m,
    `UPDATE agent_sessions SET status = 'expired', ended_at = now()
     WHERE status = 'active' AND last_heartbeat_at < now() - make_interval(secs => $1)
     RETURNING id`,
    [ttlSeconds],
  );
  return rows.map((row) => row.id);
}

/** Workspaces with an overdue session, across all of them (a definer function that returns only ids). */
export async function staleSessionWorkspaces(m: EntityManager, ttlSeconds: number): Promise<string[]> {
  const rows = await queryRows<{ workspace_id: string }>(
    m,
    `SELECT weft_stale_session_workspaces(make_interval(secs => $1)) AS workspace_id`,
    [ttlSeconds],
  );
  return rows.map((row) => row.workspace_id);
}

// ---- claims ----

/**
 * Serialises claim-making within one workspace until the transaction ends: the conflict check and
 * the insert that follows it see every claim committed before, so two overlapping claims cannot
 * both pass (a check-then-insert race would let them). Transaction-level, so never leaked.
 */
export async function lockWorkspaceClaims(m: EntityManager, workspaceId: string): Promise<void> {
  await queryRows(m, `SELECT pg_advisory_xact_lock(hashtextextended($1, 0))`, [`agent-claims:${workspaceId}`]);
}

export interface ConflictingClaim {
  claim_id: string;
  session_id: string;
  user_id: string;
  target_node_id: string;
  /** Where the holder's node sits relative to the requested one. */
  relation: 'same' | 'ancestor' | 'descendant';
}

/** The claim a session holds once `claimIfFree` made or renewed it. */
export interface HeldClaim {
  id: string;
  session_id: string;
  target_node_id: string;
  intent: string;
}

/**
 * One statement, under the workspace's claim lock: finds another session's active claim on the
 * target, on any of its ancestors or on any of its descendants through CONTAINS edges (type compared
 * case-insensitively); and when there is none, renews the session's own active claim on the target
 * (its intent) or inserts one. Answers either the conflict or the claim.
 *
 * The walk touches only the target's ancestors and the ancestors of nodes that hold a claim: a
 * descendant's claim is found by walking up from each held claim instead of down from the target
 * (the active claims and the depth are small, a subtree can be huge), each step one lookup in the
 * edges by target (edges_target_idx, which covers the type). UNION over (origin, node) pairs stops at a cycle.
 * One statement rather than three (check, look for the own claim, write) keeps the lock's hold short,
 * since every claimant of the workspace waits for it.
 */
export const claimIfFree = (
  m: EntityManager,
  input: { workspaceId: string; sessionId: string; userId: string; targetNodeId: string; intent: string },
): Promise<{ conflict: ConflictingClaim | null; claim: HeldClaim | null }> =>
  queryFirst<{ conflict: ConflictingClaim | null; claim: HeldClaim | null }>(
    m,
    `WITH RECURSIVE held AS (
       SELECT id, session_id, user_id, target_node_id FROM agent_claims
       WHERE status = 'active' AND session_id <> $2
     ), up(origin, node_id) AS (
       SELECT $1::uuid, $1::uuid
       UNION SELECT target_node_id, target_node_id FROM held
       UNION
       SELECT up.origin, e.source_node_id FROM up
       JOIN edges e ON e.target_node_id = up.node_id AND NOT e.is_deleted AND lower(e.type) = 'contains'
     ), conflict AS (
       SELECT h.id AS claim_id, h.session_id, h.user_id, h.target_node_id,
              CASE WHEN h.target_node_id = $1 THEN 'same' WHEN up.origin = $1 THEN 'ancestor' ELSE 'descendant' END
                AS relation
       FROM held h JOIN up ON (up.origin = $1 AND up.node_id = h.target_node_id)
                           OR (up.origin = h.target_node_id AND up.node_id = $1)
       ORDER BY (h.target_node_id = $1) DESC, h.id
       LIMIT 1
     ), renewed AS (
       UPDATE agent_claims SET intent = $5, updated_at = now()
       WHERE session_id = $2 AND target_node_id = $1 AND status = 'active' AND NOT EXISTS (SELECT 1 FROM conflict)
       RETURNING id, session_id, target_node_id, intent
     ), inserted AS (
       INSERT INTO agent_claims (workspace_id, session_id, user_id, target_node_id, intent)
       SELECT $3, $2, $4, $1, $5
       WHERE NOT EXISTS (SELECT 1 FROM conflict)
         AND NOT EXISTS (SELECT 1 FROM agent_claims WHERE session_id = $2 AND target_node_id = $1 AND status = 'active')
       RETURNING id, session_id, target_node_id, intent
     )
     SELECT (SELECT row_to_json(conflict) FROM conflict) AS conflict,
            (SELECT row_to_json(c) FROM (SELECT * FROM renewed UNION ALL SELECT * FROM inserted) c) AS claim`,
    [input.targetNodeId, input.sessionId, input.workspaceId, input.userId, input.intent],
  ) as Promise<{ conflict: ConflictingClaim | null; claim: HeldClaim | null }>;

/** Two active claims of different sessions that a new CONTAINS edge would put one inside the other. */
export interface ClaimsJoined {
  claim_id: string;
  session_id: string;
  user_id: string;
  target_node_id: string;
  descendant_claim_id: string;
  descendant_session_id: string;
  descendant_user_id: string;
  descendant_target_node_id: string;
}

/**
 * Review L-3: a CONTAINS edge `source → target` makes every claim on the source or its ancestors
 * an ancestor of every claim on the target or its descendants. Answers the first such pair held
 * by two sessions (the claim above first), or undefined. Walks up from the source, and up from
 * each held claim to see whether it reaches the target, as findConflictingClaim does.
 */
export const findClaimsJoinedByContains = (
  m: EntityManager,
  input: { sourceNodeId: string; targetNodeId: string },
): Promise<ClaimsJoined | undefined> =>
  queryFirst<ClaimsJoined>(
    m,
    `WITH RECURSIVE held AS (
       SELECT id, session_id, user_id, target_node_id FROM agent_claims WHERE status = 'active'
     ), above(node_id) AS (
       SELECT $1::uuid WHERE EXISTS (SELECT 1 FROM held)
       UNION
       SELECT e.source_node_id FROM above
       JOIN edges e ON e.target_node_id = above.node_id AND NOT e.is_deleted AND lower(e.type) = 'contains'
     ), up(origin, node_id) AS (
       SELECT target_node_id, target_node_id FROM held
       UNION
       SELECT up.origin, e.source_node_id FROM up
       JOIN edges e ON e.target_node_id = up.node_id AND NOT e.is_deleted AND lower(e.type) = 'contains'
     )
     SELECT a.id AS claim_id, a.session_id, a.user_id, a.target_node_id,
            b.id AS descendant_claim_id, b.session_id AS descendant_session_id, b.user_id AS descendant_user_id,
            b.target_node_id AS descendant_target_node_id
     FROM held a JOIN above ON above.node_id = a.target_node_id
     JOIN held b ON b.session_id <> a.session_id
       AND b.target_node_id IN (SELECT origin FROM up WHERE node_id = $2)
     ORDER BY a.id, b.id
     LIMIT 1`,
    [input.sourceNodeId, input.targetNodeId],
  );

export const findClaim = (m: EntityManager, claimId: string): Promise<AgentClaim | null> =>
  m.getRepository(AgentClaim).findOneBy({ id: claimId });

/** Releases `userId`'s active claim; undefined when there is none (gone, another user's, or not active). */
export const markClaimReleased = (m: EntityManager, claimId: string, userId: string) =>
  queryFirst<{ id: string }>(
    m,
    `UPDATE agent_claims SET status = 'released', closed_at = now(), updated_at = now()
     WHERE id = $1 AND user_id = $2 AND status = 'active' RETURNING id`,
    [claimId, userId],
  );

/** Abandons every active claim of these sessions and returns how many it abandoned. */
export async function abandonClaimsOf(m: EntityManager, sessionIds: readonly string[]): Promise<number> {
  if (sessionIds.length === 0) return 0;
  const rows = await queryRows<{ id: string }>(
    m,
    `UPDATE agent_claims SET status = 'abandoned', closed_at = now(), updated_at = now()
     WHERE session_id = ANY($1::uuid[]) AND status = 'active' RETURNING id`,
    [sessionIds],
  );
  return rows.length;
}

/** Active claims, newest first, optionally of one session and/or one target; at most `limit` rows. */
export function listActiveClaims(
  m: EntityManager,
  filters: { sessionId?: string; targetNodeId?: string },
  limit: number,
): Promise<AgentClaim[]> {
  const where: FindOptionsWhere<AgentClaim> = { status: 'active' };
  if (filters.sessionId) where.sessionId = filters.sessionId;
  if (filters.targetNodeId) where.targetNodeId = filters.targetNodeId;
  return m.getRepository(AgentClaim).find({ where, order: { createdAt: 'DESC', id: 'ASC' }, take: limit });
}

// ---- nodes the agent tools point at ----

/** A live node of the transaction's workspace (nodes have no entity: the graph feature reads them with SQL). */
export const findLiveNode = (m: EntityManager, nodeId: string) =>
  queryFirst<{ id: string; type: string; name: string }>(
    m,
    `SELECT id, type, name FROM nodes WHERE id = $1 AND NOT is_deleted`,
    [nodeId],
  );

// ---- findings ----

export interface FindingSqlRow {
  finding_id: string;
  target_node_id: string;
  properties: Record<string, unknown>;
  created_at: Date;
}

/**
 * `agent.finding` nodes with their live FINDING_OF edge, newest first. Raw SQL: the findings are
 * graph nodes, which have no entity.
 */
export const listFindings = (
  m: EntityManager,
  filters: { targetNodeId?: string; severity?: string },
  limit: number,
): Promise<FindingSqlRow[]> =>
  queryRows<FindingSqlRow>(
    m,
    `SELECT n.id AS finding_id, e.target_node_id, n.properties, n.created_at
     FROM nodes n
     JOIN edges e ON e.source_node_id = n.id AND e.type = 'FINDING_OF' AND NOT e.is_deleted
     WHERE n.type = 'agent.finding' AND NOT n.is_deleted
       AND ($1::uuid IS NULL OR e.target_node_id = $1)
       AND ($2::text IS NULL OR n.properties ->> 'severity' = $2)
     ORDER BY n.created_at DESC, n.id DESC
     LIMIT $3`,
    [filters.targetNodeId ?? null, filters.severity ?? null, limit],
  );

// ---- failure clusters ----

/**
 * Marks a failed session as counted and returns its signature and when it failed; undefined when it
 * was counted before (or is not a failed session with a signature), so a redelivered event counts once.
 */
export const takeFailedSessionForClustering = (m: EntityManager, sessionId: string) =>
  queryFirst<{ error_signature: string; ended_at: Date }>(
    m,
    `UPDATE agent_sessions SET clustered_at = now()
     WHERE id = $1 AND clustered_at IS NULL AND outcome = 'failed' AND error_signature IS NOT NULL
     RETURNING error_signature, ended_at`,
    [sessionId],
  );

/**
 * Adds one failed session to its cluster, creating the cluster on first sight (an upsert; raw SQL
 * for ON CONFLICT and the ordered array).
 */
export async function addToCluster(
  m: EntityManager,
  input: {
    workspaceId: string;
    signatureHash: string;
    signature: string;
    sessionId: string;
    failedAt: Date;
    keep: number;
  },
): Promise<void> {
  await queryRows(
    m,
    `INSERT INTO agent_failure_clusters AS c
       (workspace_id, signature_hash, signature, count, first_seen, last_seen, recent_session_ids)
     VALUES ($1, $2, $3, 1, $5, $5, ARRAY[$4::uuid])
     ON CONFLICT (workspace_id, signature_hash) DO UPDATE SET
       count = c.count + 1,
       first_seen = LEAST(c.first_seen, EXCLUDED.first_seen),
       last_seen = GREATEST(c.last_seen, EXCLUDED.last_seen),
       -- Newest failure first, whatever order the clustering workflows ran in.
       recent_session_ids = ARRAY(
         SELECT s.id FROM agent_sessions s WHERE s.id = ANY (c.recent_session_ids || $4::uuid)
         ORDER BY s.ended_at DESC, s.id LIMIT $6)`,
    [input.workspaceId, input.signatureHash, input.signature, input.sessionId, input.failedAt, input.keep],
  );
}

export const listClusters = (m: EntityManager, limit: number): Promise<AgentFailureCluster[]> =>
  m.getRepository(AgentFailureCluster).find({ order: { count: 'DESC', lastSeen: 'DESC', id: 'ASC' }, take: limit });
