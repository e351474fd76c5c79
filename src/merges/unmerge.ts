import type { EntityManager } from 'typeorm';
import { toNodeResponse } from '../graph/repository';
import type { ImportanceSettings } from '../ontology-config/schemas';
import { ConflictError } from '../platform/errors';
import { markUnmerged } from './candidates-repository';
import { candidateResponse, lockedCandidate, recordAction, toAction } from './decisions';
import { MergeAction } from './entities';
import { findNodeRows } from './pair-repository';
import { loadPairKeys } from './people-repository';
import { pairEvidence } from './person-rules';
import type { UnmergeResponse } from './schemas';
import { restoreMergedPair, UnmergeRefusedError } from './unmerge-apply';

// Undoing an applied merge (issue 31 part 3), in the caller's transaction. The review workflow of
// the candidate ended when the merge was applied (an auto-merge never had one), so there is no
// workflow to hand this to: it runs as one transaction under the workspace's unit of work,
// serialised with decisions by the candidate's row lock.

/**
 * Undoes the candidate's merge: the candidate locked and `applied` (else 409: already unmerged,
 * or never merged), its merge's record read, the pair restored (restoreMergedPair), the candidate
 * `unmerged` with the pair's evidence as restored, and an `unmerged` action written.
 */
export async function unmergeCandidate(
  m: EntityManager,
  input: { candidateId: string; performedBy: string | null; notes: string | null; importance: ImportanceSettings },
): Promise<UnmergeResponse> {
  const candidate = await lockedCandidate(m, input.candidateId);
  if (candidate.status === 'unmerged') throw new ConflictError('This merge was already undone');
  if (candidate.status !== 'applied') {
    throw new ConflictError(`Merge candidate is ${candidate.status}; only an applied merge can be undone`);
  }
  const merged = await m.getRepository(MergeAction).findOneBy({ candidateId: candidate.id, action: 'merged' });
  const record = merged?.details.undo;
  if (!record) throw new UnmergeRefusedError('it was applied before merges recorded what they changed');

  const { workspaceId, survivorNodeId: survivorId, duplicateNodeId: duplicateId } = candidate;
  const restored = await restoreMergedPair(m, {
    workspaceId,
    survivorId,
    duplicateId,
    record,
    importance: input.importance,
  });

  const keys = await loadPairKeys(m, [survivorId, duplicateId]);
  const blank = { email_key: null, name_key: null };
  const evidence = pairEvidence(
    keys.find((k) => k.id === survivorId) ?? blank,
    keys.find((k) => k.id === duplicateId) ?? blank,
  );
  await markUnmerged(m, candidate.id, evidence);

  const action = await recordAction(m, {
    candidate,
    action: 'unmerged',
    performedBy: input.performedBy,
    notes: input.notes,
    details: {
      edges_restored: restored.edgesRestored,
      edges_undeleted: restored.edgesUndeleted,
      edges_not_restored: restored.edgesNotRestored,
      edges_left_on_survivor: restored.edgesLeftOnSurvivor.map((edge) => edge.id),
      survivor_properties_kept: restored.survivorPropertiesKept,
      evidence,
    },
  });

  const nodes = await findNodeRows(m, [survivorId, duplicateId]);
  const node = (id: string) => {
    const row = nodes.find((n) => n.id === id);
    if (!row) throw new Error(`node ${id} vanished inside the unmerge's transaction`);
    return toNodeResponse(row);
  };
  return {
    candidate: await candidateResponse(m, candidate.id),
    action: toAction(action),
    unmerge: {
      survivor: node(survivorId),
      restored: node(duplicateId),
      edges_restored: restored.edgesRestored,
      edges_undeleted: restored.edgesUndeleted,
      edges_not_restored: restored.edgesNotRestored,
      edges_left_on_survivor: restored.edgesLeftOnSurvivor,
      survivor_properties_kept: restored.survivorPropertiesKept,
    },
  };
}

/** The candidate with its history: every action taken on it, oldest first (merged, then unmerged). */
export async function candidateHistory(m: EntityManager, candidateId: string) {
  const candidate = await candidateResponse(m, candidateId);
  const actions = await m
    .getRepository(MergeAction)
    .find({ where: { candidateId }, order: { createdAt: 'ASC', id: 'ASC' } });
  return { candidate, actions: actions.map(toAction) };
}
