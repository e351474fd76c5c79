import { z } from 'zod';
import { NodeResponse } from '../graph/schemas';
import { LIMITS } from '../rules/limits';
import { MATCH_REASONS } from './person-rules';

const timestamp = z.iso.datetime({ offset: true });

export const MergeCandidateStatus = z
  .enum(['pending', 'applied', 'rejected', 'superseded', 'unmerged'])
  .describe(
    'superseded: one of the two nodes was merged away or deleted before a reviewer decided; ' +
      'unmerged: the merge was applied, then undone.',
  );

const NodeSummary = z
  .object({ id: z.uuid(), type: z.string(), name: z.string(), properties: z.record(z.string(), z.unknown()) })
  .meta({ id: 'MergeNodeSummary' });

/** knowledge-graph-service-api.md §2.4 (NodeMergeCandidate), plus both nodes and timestamps. */
export const MergeCandidate = z
  .object({
    id: z.uuid(),
    status: MergeCandidateStatus,
    match_reasons: z.array(z.enum(MATCH_REASONS as [string, ...string[]])),
    confidence_score: z.number().min(0).max(1),
    survivor_node_id: z.uuid().describe('The older node; it stays.'),
    duplicate_node_id: z.uuid().describe('The newer node; a merge soft-deletes it.'),
    survivor_node: NodeSummary,
    duplicate_node: NodeSummary,
    created_at: timestamp,
    updated_at: timestamp,
    resolved_at: timestamp.nullable(),
  })
  .meta({ id: 'MergeCandidate' });
export type MergeCandidate = z.input<typeof MergeCandidate>;

/** knowledge-graph-service-api.md §2.4 (NodeMergeAction). */
export const MergeAction = z
  .object({
    id: z.uuid(),
    candidate_id: z.uuid(),
    action: z.enum(['merged', 'rejected', 'unmerged']),
    performed_by: z.uuid().nullable().describe('null: the system (auto-merge).'),
    notes: z.string().nullable(),
    created_at: timestamp,
  })
  .meta({ id: 'MergeAction' });
export type MergeAction = z.input<typeof MergeAction>;

export const MergeSummary = z
  .object({
    survivor: NodeResponse,
    duplicate_node_id: z.uuid(),
    edges_repointed: z.number().int(),
    edges_removed: z.number().int().describe('Duplicates of a survivor edge, or edges between the two nodes.'),
    superseded_candidate_ids: z.array(z.uuid()),
  })
  .meta({ id: 'MergeSummary' });
export type MergeSummary = z.input<typeof MergeSummary>;

export const MergeDecisionResponse = z
  .object({ candidate: MergeCandidate, action: MergeAction, merge: MergeSummary.nullable() })
  .meta({ id: 'MergeDecisionResponse' });
export type MergeDecisionResponse = z.input<typeof MergeDecisionResponse>;

export const MergeListQuery = z.object({
  status: MergeCandidateStatus.default('pending').describe(
    'Which candidates: pending (the queue, both nodes live, newest first) by default; another status ' +
      'lists those candidates, latest resolution first (applied: the merges that can be undone).',
  ),
  limit: z.coerce.number().int().min(1).max(LIMITS.merges.list.max).default(LIMITS.merges.list.default),
  offset: z.coerce.number().int().min(0).default(0),
});
export type MergeListQuery = z.infer<typeof MergeListQuery>;

export const MergeIdParams = z.object({ id: z.uuid() });

// Both the notes and the body itself are optional: a bare POST approves or rejects.
export const MergeDecisionBody = z
  .strictObject({ notes: z.string().max(LIMITS.merges.notesChars).nullish() })
  .meta({ id: 'MergeDecisionRequest' })
  .default({});
export type MergeDecisionBody = z.infer<typeof MergeDecisionBody>;

export const MergeEdgeLeft = z
  .object({
    id: z.uuid(),
    type: z.string(),
    source_node_id: z.uuid(),
    target_node_id: z.uuid(),
    created_at: timestamp,
  })
  .meta({ id: 'MergeEdgeLeft' });

export const UnmergeSummary = z
  .object({
    survivor: NodeResponse,
    restored: NodeResponse.describe('The merged-away node, live again as it was before the merge.'),
    edges_restored: z.array(z.uuid()).describe('Edges the merge had re-pointed, back on the restored node.'),
    edges_undeleted: z
      .array(z.uuid())
      .describe('Edges the merge had soft-deleted (duplicates, or between the two nodes), live again.'),
    edges_not_restored: z
      .array(z.object({ id: z.uuid(), reason: z.string() }))
      .describe('Edges the merge moved or removed that were changed or deleted since: left as they are.'),
    edges_left_on_survivor: z
      .array(MergeEdgeLeft)
      .describe(
        'Edges created on the survivor after the merge: they stay there, for the reviewer to reassign ' +
          `(oldest first, at most ${LIMITS.merges.unmergeEdgesListed}).`,
      ),
    survivor_properties_kept: z
      .array(z.string())
      .describe('Properties the merge gave the survivor that were edited since: the edits stand.'),
  })
  .meta({ id: 'UnmergeSummary' });

export const UnmergeResponse = z
  .object({ candidate: MergeCandidate, action: MergeAction, unmerge: UnmergeSummary })
  .meta({ id: 'UnmergeResponse' });
export type UnmergeResponse = z.input<typeof UnmergeResponse>;

export const MergeHistory = z
  .object({ candidate: MergeCandidate, actions: z.array(MergeAction).describe('Oldest first.') })
  .meta({ id: 'MergeHistory' });
export type MergeHistory = z.input<typeof MergeHistory>;
