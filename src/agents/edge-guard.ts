import type { EntityManager } from 'typeorm';
import type { GuardedEdge } from '../graph/edge-guards';
import { ConflictError } from '../platform/errors';
import { findClaimsJoinedByContains, lockWorkspaceClaims } from './repository';

/**
 * At most one session holds any node of a CONTAINS subtree (agent.claim_work's invariant), so a
 * CONTAINS edge that would put one session's claim under another's is refused with the claim
 * conflict's 409 rather than leaving both claims active (review L-3). Under the workspace's claim
 * lock, so a claim made meanwhile is seen, and this edge is seen by the next claim's check. The
 * graph runs it before every edge write (its `edgeGuards`, agents/feature.ts).
 */
export async function refuseJoiningClaims(m: EntityManager, workspaceId: string, edge: GuardedEdge): Promise<void> {
  if (edge.type.toLowerCase() !== 'contains') return;
  await lockWorkspaceClaims(m, workspaceId);
  const joined = await findClaimsJoinedByContains(m, {
    sourceNodeId: edge.source_node_id,
    targetNodeId: edge.target_node_id,
  });
  if (joined) {
    throw new ConflictError({
      error: 'claim_conflict',
      message: 'The CONTAINS edge would put a node claimed by one session inside a node claimed by another',
      ...joined,
    });
  }
}
