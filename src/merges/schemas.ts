import { z } from 'zod';
import { NodeResponse } from '../graph/schemas';
import { LIMITS } from '../rules/limits';
import { MATCH_REASONS } from './person-rules';

const timestamp = z.iso.datetime({ offset: true });

export const MergeCandidateStatus = z
  .enum(['pending', 'applied', 'rejected', 'superseded'])
  .describe('superseded: one of the two nodes was merged away or deleted before a reviewer decided.');

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
    action: z.enum(['merged', 'rejected']),
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
