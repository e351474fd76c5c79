import type { EntityManager } from 'typeorm';
import type { z } from 'zod';
import type { ChangeSetOperations } from '../change-sets/schemas';
import { createEdgeInTransaction, createNodeInTransaction } from '../graph/writes';
import { iso } from '../platform/dates';
import { ConflictError, ForbiddenError, NotFoundError, ValidationFailedError } from '../platform/errors';
import { enqueueEvent } from '../platform/outbox/relay';
import { LIMITS } from '../rules/limits';
import type { AgentClaim, AgentSession } from './entities';
import { sessionFailed } from './events';
import * as repo from './repository';
import type {
  ClaimRow,
  ClaimWorkInput,
  EndSessionInput,
  FailureCluster,
  FindingRow,
  GetFindingsInput,
  ListActiveClaimsInput,
  RecordFindingInput,
  StartSessionInput,
} from './schemas';
import { signatureHash } from './signature';

/**
 * Agent coordination: sessions, claims, findings and failure clusters. Every function runs in the
 * caller's unit of work (for write tools, the capability call's own transaction, so the effect and
 * its idempotency row commit together) and answers for `actor`, the authenticated caller.
 */
export interface Actor {
  workspaceId: string;
  userId: string;
}

export const FINDING_NODE_TYPE = 'agent.finding';
export const FINDING_EDGE_TYPE = 'FINDING_OF';

/** Another workspace's session is 404 (RLS hides it); another user's, in a shared workspace, 403. */
function ownSession(session: AgentSession | null, actor: Actor, sessionId: string): AgentSession {
  if (!session) throw new NotFoundError({ error: 'session_not_found', session_id: sessionId });
  if (session.userId !== actor.userId) {
    throw new ForbiddenError({ error: 'not_session_owner', message: 'This session belongs to another user' });
  }
  return session;
}

async function liveNode(m: EntityManager, nodeId: string) {
  const node = await repo.findLiveNode(m, nodeId);
  if (!node) throw new NotFoundError({ error: 'node_not_found', node_id: nodeId });
  return node;
}

const claimRow = (claim: AgentClaim): ClaimRow => ({
  claim_id: claim.id,
  session_id: claim.sessionId,
  user_id: claim.userId,
  target_node_id: claim.targetNodeId,
  intent: claim.intent,
  status: claim.status,
  created_at: iso(claim.createdAt),
  updated_at: iso(claim.updatedAt),
});

/** Unscoped lists stop at the contract's 200 rows; filtered ones at a larger safety bound. */
function capFor(scoped: boolean): number {
  return scoped ? LIMITS.agents.scopedRows : LIMITS.unscopedCapabilityRows;
}

// ---- sessions ----

export async function startSession(
  m: EntityManager,
  actor: Actor,
  input: z.output<typeof StartSessionInput>,
  ttlSeconds: number,
) {
  const session = await repo.insertSession(m, {
    workspaceId: actor.workspaceId,
    userId: actor.userId,
    name: input.name ?? null,
    metadata: input.metadata ?? {},
  });
  return {
    session_id: session.id,
    status: 'active' as const,
    started_at: iso(session.startedAt),
    heartbeat_ttl_seconds: ttlSeconds,
  };
}

export async function heartbeat(m: EntityManager, actor: Actor, sessionId: string) {
  // The common case, the owner's active session, is one statement; anything else is sorted out below.
  const stamped = await repo.stampHeartbeat(m, sessionId, actor.userId);
  if (stamped) {
    return {
      session_id: sessionId,
      status: 'active' as const,
      already_inactive: false,
      last_heartbeat_at: iso(new Date(stamped.last_heartbeat_at)),
    };
  }
  // Unknown (404), another user's (403), or no longer active (ended or expired): say so, change nothing.
  const inactive = ownSession(await repo.findSession(m, sessionId), actor, sessionId);
  return {
    session_id: sessionId,
    status: inactive.status,
    already_inactive: true,
    last_heartbeat_at: iso(inactive.lastHeartbeatAt),
  };
}

/**
 * Ends an active session with its outcome and abandons its active claims. Idempotent: a session
 * that already ended or expired is reported as it is, with nothing abandoned. A failure with a
 * signature leaves an outbox event for the clustering workflow (the caller kicks the outbox).
 */
export async function endSession(m: EntityManager, actor: Actor, input: z.output<typeof EndSessionInput>) {
  const session = ownSession(await repo.findSession(m, input.session_id), actor, input.session_id);
  const ended = await repo.markSessionEnded(m, {
    sessionId: session.id,
    outcome: input.outcome,
    errorSignature: input.error_signature ?? null,
  });
  if (!ended) {
    const now = (await repo.findSession(m, session.id))!;
    return { session_id: session.id, status: now.status, outcome: now.outcome, abandoned_claims: 0, failed: false };
  }
  const abandoned = await repo.abandonClaimsOf(m, [session.id]);
  const failed = input.outcome === 'failed' && input.error_signature !== undefined;
  if (failed) {
    await enqueueEvent(m, sessionFailed, {
      workspaceId: actor.workspaceId,
      aggregateId: session.id,
      payload: { session_id: session.id },
    });
  }
  return { session_id: session.id, status: ended.status, outcome: ended.outcome, abandoned_claims: abandoned, failed };
}

/** The sweeper's pass over one workspace: expire overdue sessions and abandon their claims. */
export async function expireStaleSessions(m: EntityManager, ttlSeconds: number) {
  const expired = await repo.expireStaleSessions(m, ttlSeconds);
  const abandoned = await repo.abandonClaimsOf(m, expired);
  return { expired: expired.length, abandoned };
}

// ---- claims ----

/**
 * Claims a live node for an active session of the caller's. The session is read with a share lock
 * (it cannot end meanwhile) before the workspace's claim lock is taken; under that lock, the conflict
 * check and the write are one statement, so they are one step for every other claimant and the lock
 * is held as briefly as it can be. A re-claim by the same session updates the intent and keeps the claim id.
 */
export async function claimWork(m: EntityManager, actor: Actor, input: z.output<typeof ClaimWorkInput>) {
  await liveNode(m, input.target_node_id);
  const session = ownSession(await repo.findSessionForClaim(m, input.session_id), actor, input.session_id);
  if (session.status !== 'active') {
    throw new ConflictError({
      error: 'session_inactive',
      message: 'Only an active session can claim work',
      session_id: session.id,
      status: session.status,
    });
  }
  await repo.lockWorkspaceClaims(m, actor.workspaceId);
  const { conflict, claim } = await repo.claimIfFree(m, {
    workspaceId: actor.workspaceId,
    sessionId: session.id,
    userId: actor.userId,
    targetNodeId: input.target_node_id,
    intent: input.intent,
  });
  if (conflict) {
    const where = conflict.relation === 'same' ? 'the node itself' : `its ${conflict.relation}`;
    throw new ConflictError({
      error: 'claim_conflict',
      message: `Node is already claimed by another session (on ${where})`,
      ...conflict,
    });
  }
  // Without a conflict the statement either renewed the session's claim or inserted one.
  if (!claim) throw new Error('claimIfFree answered neither a conflict nor a claim');
  return {
    claim_id: claim.id,
    session_id: claim.session_id,
    target_node_id: claim.target_node_id,
    intent: claim.intent,
    status: 'active' as const,
  };
}

/** Owner-only (403 for anyone else in the workspace); idempotent on released or abandoned claims. */
export async function releaseClaim(m: EntityManager, actor: Actor, claimId: string) {
  // The common case, the owner's active claim, is one statement; anything else is sorted out below.
  const released = await repo.markClaimReleased(m, claimId, actor.userId);
  if (released) return { claim_id: released.id, status: 'released' as const };
  const claim = await repo.findClaim(m, claimId);
  if (!claim) throw new NotFoundError({ error: 'claim_not_found', claim_id: claimId });
  if (claim.userId !== actor.userId) {
    throw new ForbiddenError({ error: 'not_claim_owner', message: 'Only the user who opened a claim may release it' });
  }
  // Released before, or abandoned by an end or a sweep.
  return { claim_id: claim.id, status: claim.status as 'released' | 'abandoned' };
}

export async function listActiveClaims(m: EntityManager, input: z.output<typeof ListActiveClaimsInput>) {
  if (input.session_id && !(await repo.findSession(m, input.session_id))) {
    throw new NotFoundError({ error: 'session_not_found', session_id: input.session_id });
  }
  if (input.target_node_id) await liveNode(m, input.target_node_id);
  const cap = capFor(Boolean(input.session_id || input.target_node_id));
  const rows = await repo.listActiveClaims(
    m,
    { sessionId: input.session_id, targetNodeId: input.target_node_id },
    cap + 1,
  );
  return { claims: rows.slice(0, cap).map(claimRow), truncated: rows.length > cap };
}

// ---- findings ----

/**
 * A finding is an `agent.finding` node linked to its target by a FINDING_OF edge, so traversals
 * show it. The target must be a live `code.*` node (422 for another type, 404 when unknown).
 */
/**
 * `agent.record_finding`. Where the workspace stages agents' writes (an MCP token's call with
 * `staging.agent_writes`), the node and edge become a change-set for a reviewer instead (issue 31 part 4).
 */
export async function recordFinding(
  m: EntityManager,
  actor: Actor,
  input: z.output<typeof RecordFindingInput>,
  staging?: { stage: (operations: ChangeSetOperations) => Promise<{ change_set_id: string }> },
) {
  const target = await liveNode(m, input.target_node_id);
  if (!target.type.startsWith('code.')) {
    throw new ValidationFailedError([
      {
        loc: ['body', 'target_node_id'],
        msg: `Findings attach to code.* nodes; this node is of type ${target.type}`,
        type: 'target_not_code',
      },
    ]);
  }
  if (input.session_id && !(await repo.findSession(m, input.session_id))) {
    throw new NotFoundError({ error: 'session_not_found', session_id: input.session_id });
  }
  const finding = {
    type: FINDING_NODE_TYPE,
    name: input.title,
    properties: {
      severity: input.severity,
      kind: input.kind,
      title: input.title,
      detail: input.detail ?? null,
      session_id: input.session_id ?? null,
      recorded_by: actor.userId,
    },
  };
  if (staging) {
    const staged = await staging.stage({
      nodes: [
        { ref: 'finding', node_id: null, ...finding },
        { ref: 'target', node_id: target.id, type: target.type, name: target.name, properties: {} },
      ],
      edges: [
        { type: FINDING_EDGE_TYPE, source_ref: 'finding', target_ref: 'target', reasoning: null, evidence: null },
      ],
      property_changes: [],
    });
    return { finding_id: null, target_node_id: target.id, change_set_id: staged.change_set_id };
  }
  const node = await createNodeInTransaction(m, actor.workspaceId, finding);
  await createEdgeInTransaction(m, actor.workspaceId, {
    type: FINDING_EDGE_TYPE,
    source_node_id: node.id,
    target_node_id: target.id,
  });
  return { finding_id: node.id, target_node_id: target.id };
}

export async function getFindings(m: EntityManager, input: z.output<typeof GetFindingsInput>) {
  if (input.target_node_id) await liveNode(m, input.target_node_id);
  const cap = capFor(Boolean(input.target_node_id));
  const rows = await repo.listFindings(m, { targetNodeId: input.target_node_id, severity: input.severity }, cap + 1);
  const findings: FindingRow[] = rows.slice(0, cap).map((row) => ({
    finding_id: row.finding_id,
    target_node_id: row.target_node_id,
    severity: row.properties.severity as FindingRow['severity'],
    kind: String(row.properties.kind),
    title: String(row.properties.title),
    detail: typeof row.properties.detail === 'string' ? row.properties.detail : null,
    session_id: typeof row.properties.session_id === 'string' ? row.properties.session_id : null,
    created_at: iso(new Date(row.created_at)),
  }));
  return { findings, truncated: rows.length > cap };
}

// ---- failure clusters ----

/**
 * Counts one failed session into the cluster of its normalised signature. Exactly once per session:
 * the session row is marked in the same transaction, so a retried activity or a redelivered event
 * changes nothing.
 */
export async function clusterFailedSession(m: EntityManager, workspaceId: string, sessionId: string) {
  const failed = await repo.takeFailedSessionForClustering(m, sessionId);
  if (!failed) return { clustered: false };
  const { hash, normalized } = signatureHash(failed.error_signature);
  await repo.addToCluster(m, {
    workspaceId,
    signatureHash: hash,
    signature: normalized,
    sessionId,
    failedAt: new Date(failed.ended_at),
    keep: LIMITS.agents.clusters.recentSessions,
  });
  return { clustered: true };
}

export async function failureClusters(m: EntityManager, limit: number): Promise<{ clusters: FailureCluster[] }> {
  const rows = await repo.listClusters(m, limit);
  return {
    clusters: rows.map((row) => ({
      cluster_id: row.id,
      signature: row.signature,
      count: row.count,
      first_seen: iso(row.firstSeen),
      last_seen: iso(row.lastSeen),
      recent_session_ids: row.recentSessionIds,
    })),
  };
}
