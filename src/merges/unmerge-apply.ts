import { isDeepStrictEqual } from 'node:util';
import type { EntityManager } from 'typeorm';
import type { ImportanceSettings } from '../ontology-config/schemas';
import { setChangeContext } from '../platform/db/unit-of-work';
import { ConflictError } from '../platform/errors';
import { LIMITS } from '../rules/limits';
import type { MergeUndoRecord } from './entities';
import type { EdgeLeft } from './pair-repository';
import {
  edgeStates,
  edgesBuiltSince,
  lockPairSince,
  restoreRepointedEdges,
  revertSurvivor,
  reviveNode,
  undeleteRemovedEdges,
} from './pair-repository';

// The writes of an unmerge, all in `restoreMergedPair` (one place to label them, e.g. for
// versions); their statements are in pair-repository.ts.

type Properties = Record<string, unknown>;

/** The merge cannot be undone as things stand; `detail` says why (409). */
export class UnmergeRefusedError extends ConflictError {
  constructor(reason: string) {
    super(`This merge cannot be undone: ${reason}`);
  }
}

export interface RestoredPair {
  /** Re-pointed back to the restored node. */
  edgesRestored: string[];
  /** Soft-deleted by the merge, live again. */
  edgesUndeleted: string[];
  /** Recorded by the merge but changed or deleted since: left as they are. */
  edgesNotRestored: { id: string; reason: string }[];
  /** Created on the survivor after the merge: they stay there, for the reviewer to reassign. */
  edgesLeftOnSurvivor: EdgeLeft[];
  /** Keys the merge gave the survivor that were edited since: kept as edited. */
  survivorPropertiesKept: string[];
}

/**
 * The survivor's properties with the merge's contribution taken back, three-way: a key the merge
 * added goes, a key the merge changed (`aliases`) gets its old value, unless the key was edited
 * since the merge, in which case the edit stands (and is reported). Keys the merge left alone keep
 * whatever they hold now.
 */
export function revertProperties(
  record: Pick<MergeUndoRecord, 'survivor_properties_before' | 'survivor_properties_after'>,
  current: Properties,
): { properties: Properties; kept: string[] } {
  const before = record.survivor_properties_before;
  const after = record.survivor_properties_after;
  const properties: Properties = { ...current };
  const kept: string[] = [];
  for (const key of Object.keys(after)) {
    const added = !(key in before);
    if (!added && isDeepStrictEqual(before[key], after[key])) continue;
    if (!(key in current)) continue;
    if (!isDeepStrictEqual(current[key], after[key])) {
      kept.push(key);
      continue;
    }
    if (added) delete properties[key];
    else properties[key] = before[key];
  }
  return { properties, kept: kept.sort() };
}

/** Why a recorded edge was not put back, from its row as it is now. */
async function whyNotRestored(m: EntityManager, ids: string[]): Promise<Map<string, string>> {
  if (ids.length === 0) return new Map();
  const rows = await edgeStates(m, ids);
  const reasons = new Map(ids.map((id) => [id, 'the edge no longer exists']));
  for (const row of rows) {
    reasons.set(
      row.id,
      row.ends_deleted
        ? 'a node at its other end was deleted since the merge'
        : row.is_deleted
          ? 'the edge was deleted since the merge'
          : 'the edge was moved since the merge',
    );
  }
  return reasons;
}

/**
 * Undoes one merge from its record, in the caller's transaction: the duplicate live again as it
 * was (it was only soft-deleted, so its name, properties and embedding are intact), the edges the
 * merge re-pointed moved back to it, the edges it soft-deleted live again, the survivor's
 * properties reverted (`revertProperties`) and its reference count less the duplicate's, its
 * importance recomputed. Refuses (UnmergeRefusedError, before any write) when the survivor was
 * deleted, or the duplicate is gone, live, or was changed since the merge. An edge changed since
 * is left as it is and reported, as are the edges created on the survivor since the merge.
 */
export async function restoreMergedPair(
  m: EntityManager,
  input: {
    workspaceId: string;
    survivorId: string;
    duplicateId: string;
    record: MergeUndoRecord;
    importance: ImportanceSettings;
  },
): Promise<RestoredPair> {
  const { workspaceId, survivorId, duplicateId, record } = input;
  const nodes = await lockPairSince(m, [survivorId, duplicateId], record.merged_at);
  const survivor = nodes.find((node) => node.id === survivorId);
  const duplicate = nodes.find((node) => node.id === duplicateId);
  if (!survivor || survivor.is_deleted) {
    throw new UnmergeRefusedError(
      'the survivor was deleted since the merge (or merged into another node: undo that first)',
    );
  }
  if (!duplicate) throw new UnmergeRefusedError('the merged-away node no longer exists');
  if (!duplicate.is_deleted) throw new UnmergeRefusedError('the merged-away node is live again');
  if (duplicate.changed_since || !duplicate.deleted_by_merge) {
    throw new UnmergeRefusedError('the merged-away node was changed or deleted again since the merge');
  }

  // The version rows of this transaction's node and edge writes say they were an unmerge (issue 31).
  await setChangeContext(m, { op: 'unmerge' });

  // 1. The duplicate, live again.
  await reviveNode(m, duplicateId);

  // 2. The survivor: the merge's properties taken back, the duplicate's references taken off.
  const reverted = revertProperties(record, survivor.properties);
  await revertSurvivor(m, { survivorId, duplicateId, properties: reverted.properties, importance: input.importance });

  // 3. Re-pointed edges back to the duplicate, if each is still live where the merge put it.
  const restored = await restoreRepointedEdges(m, {
    workspaceId,
    survivorId,
    duplicateId,
    edges: record.repointed_edges,
  });

  // 4. Edges the merge soft-deleted, live again if still as the merge left them and both ends live.
  const undeleted = await undeleteRemovedEdges(m, {
    workspaceId,
    mergedAt: record.merged_at,
    edges: record.removed_edges,
  });

  const done = new Set([...restored, ...undeleted].map((row) => row.id));
  const missed = [...record.repointed_edges, ...record.removed_edges].map((e) => e.id).filter((id) => !done.has(id));
  const reasons = await whyNotRestored(m, missed);

  // 5. What was built on the survivor since the merge stays there; the reviewer may move it.
  const left = await edgesBuiltSince(m, {
    workspaceId,
    survivorId,
    since: record.merged_at,
    limit: LIMITS.merges.unmergeEdgesListed,
  });

  return {
    edgesRestored: restored.map((row) => row.id),
    edgesUndeleted: undeleted.map((row) => row.id),
    edgesNotRestored: missed.map((id) => ({ id, reason: reasons.get(id) ?? 'unknown' })),
    edgesLeftOnSurvivor: left,
    survivorPropertiesKept: reverted.kept,
  };
}
