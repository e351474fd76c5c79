import type { EntityManager } from 'typeorm';
import { toNodeResponse } from '../graph/repository';
import type { ImportanceSettings } from '../ontology-config/schemas';
import { setChangeContext } from '../platform/db/unit-of-work';
import { ConflictError, NotFoundError } from '../platform/errors';
import { findCandidateResponse, lockCandidate, resolveCandidate, supersedeCandidatesOf } from './candidates-repository';
import type { MergeCandidate } from './entities';
import { MergeAction } from './entities';
import { PairNotLiveError } from './errors';
import { findNodeRows, foldEdges, foldNodeRows, lockLivePair, transactionTime } from './pair-repository';
import { combineProperties } from './person-rules';
import type { MergeAction as ActionResponse, MergeDecisionResponse, MergeSummary } from './schemas';

// A decision on one candidate, in the caller's transaction (knowledge-graph-service-api.md §3: "merge runs in the same
// transaction"). Refusals are domain errors: NotFoundError (no such candidate in this workspace),
// ConflictError (already resolved), PairNotLiveError (a node is gone).

type ActionKind = MergeAction['action'];

export const toAction = (action: MergeAction): ActionResponse => ({
  id: action.id,
  candidate_id: action.candidateId,
  action: action.action,
  performed_by: action.performedBy,
  notes: action.notes,
  created_at: action.createdAt.toISOString(),
});

export async function lockedCandidate(m: EntityManager, candidateId: string): Promise<MergeCandidate> {
  const candidate = await lockCandidate(m, candidateId);
  if (!candidate) throw new NotFoundError('Merge candidate not found');
  return candidate;
}

export async function candidateResponse(m: EntityManager, candidateId: string) {
  const candidate = await findCandidateResponse(m, candidateId);
  if (!candidate) throw new NotFoundError('Merge candidate not found');
  return candidate;
}

export function recordAction(
  m: EntityManager,
  input: {
    candidate: MergeCandidate;
    action: ActionKind;
    performedBy: string | null;
    notes: string | null;
    details?: MergeAction['details'];
  },
): Promise<MergeAction> {
  const actions = m.getRepository(MergeAction);
  return actions.save(
    actions.create({
      workspaceId: input.candidate.workspaceId,
      candidateId: input.candidate.id,
      action: input.action,
      survivorNodeId: input.candidate.survivorNodeId,
      duplicateNodeId: input.candidate.duplicateNodeId,
      performedBy: input.performedBy,
      notes: input.notes,
      details: input.details ?? {},
    }),
  );
}

async function summaryOf(m: EntityManager, candidate: MergeCandidate, action: MergeAction): Promise<MergeSummary> {
  const [survivor] = await findNodeRows(m, [candidate.survivorNodeId]);
  if (!survivor) throw new NotFoundError('Survivor node not found');
  return {
    survivor: toNodeResponse(survivor),
    duplicate_node_id: candidate.duplicateNodeId,
    edges_repointed: action.details.edges_repointed ?? 0,
    edges_removed: action.details.edges_removed ?? 0,
    superseded_candidate_ids: action.details.superseded_candidate_ids ?? [],
  };
}

async function responseOf(m: EntityManager, candidate: MergeCandidate, action: MergeAction) {
  return {
    candidate: await candidateResponse(m, candidate.id),
    action: toAction(action),
    merge: action.action === 'merged' ? await summaryOf(m, candidate, action) : null,
  };
}

/**
 * A candidate that is no longer pending. If it was resolved exactly as asked, by the same
 * performer, this is a retried activity whose first attempt committed: answer as that attempt
 * would have. Anything else is a conflict.
 */
async function replayOrConflict(
  m: EntityManager,
  candidate: MergeCandidate,
  wanted: ActionKind,
  performedBy: string | null,
): Promise<MergeDecisionResponse> {
  const action = await m.getRepository(MergeAction).findOneBy({ candidateId: candidate.id, action: wanted });
  const resolvedAs = wanted === 'merged' ? 'applied' : 'rejected';
  if (action && candidate.status === resolvedAs && action.performedBy === performedBy) {
    return responseOf(m, candidate, action);
  }
  throw new ConflictError(`Merge candidate is already ${candidate.status}`);
}

export async function rejectCandidate(
  m: EntityManager,
  input: { candidateId: string; performedBy: string; notes: string | null },
): Promise<MergeDecisionResponse> {
  const candidate = await lockedCandidate(m, input.candidateId);
  if (candidate.status !== 'pending') return replayOrConflict(m, candidate, 'rejected', input.performedBy);
  await resolveCandidate(m, candidate.id, 'rejected');
  const action = await recordAction(m, {
    candidate,
    action: 'rejected',
    performedBy: input.performedBy,
    notes: input.notes,
  });
  return responseOf(m, candidate, action);
}

/**
 * The merge: both nodes locked and live (else PairNotLiveError), the duplicate's edges folded into
 * the survivor and the duplicate into the survivor (pair-repository.ts), the candidate applied, every
 * other pending candidate naming the duplicate superseded, and the action row written with what
 * the merge changed (`details.undo`), so that it can be undone.
 */
export async function mergeCandidate(
  m: EntityManager,
  input: { candidateId: string; performedBy: string | null; notes: string | null; importance: ImportanceSettings },
): Promise<MergeDecisionResponse> {
  const candidate = await lockedCandidate(m, input.candidateId);
  if (candidate.status !== 'pending') return replayOrConflict(m, candidate, 'merged', input.performedBy);

  const { survivorNodeId: survivorId, duplicateNodeId: duplicateId, workspaceId } = candidate;
  const pair = await lockLivePair(m, { survivorId, duplicateId });
  if (!pair) throw new PairNotLiveError();

  const mergedAt = await transactionTime(m);
  // The version rows of this transaction's node and edge writes say they were a merge (issue 31).
  await setChangeContext(m, { op: 'merge' });
  const edges = await foldEdges(m, { workspaceId, survivorId, duplicateId });
  // The survivor keeps the combined properties (person-rules.ts), the duplicate is soft-deleted.
  const combined = combineProperties(pair.survivor, pair.duplicate);
  await foldNodeRows(m, { ...pair, combined, importance: input.importance });
  await resolveCandidate(m, candidate.id, 'applied');
  const superseded = await supersedeCandidatesOf(m, {
    workspaceId,
    nodeId: duplicateId,
    exceptCandidateId: candidate.id,
  });

  const action = await recordAction(m, {
    candidate,
    action: 'merged',
    performedBy: input.performedBy,
    notes: input.notes,
    details: {
      edges_repointed: edges.repointed,
      edges_removed: edges.removed,
      superseded_candidate_ids: superseded,
      // Everything an unmerge needs to put back (unmerge-apply.ts).
      undo: {
        merged_at: mergedAt,
        survivor_properties_before: pair.survivor.properties,
        survivor_properties_after: combined,
        repointed_edges: edges.repointedEdges,
        removed_edges: edges.removedEdges,
      },
    },
  });
  return responseOf(m, candidate, action);
}
