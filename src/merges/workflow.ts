import { defineQuery, defineSignal, defineUpdate } from '@temporalio/workflow';
import { defineWorkflow } from '../platform/temporal/contract';
import type { MergeDecisionResponse } from './schemas';
import type {
  MergeDecision,
  MergeReviewStatus,
  MergeWorkflowInput,
  MergeWorkflowResult,
  ResolvePersonInput,
  ResolvePersonResult,
} from './types';

export const resolveWorkflowId = (nodeId: string) => `resolve-${nodeId}`;
export const mergeWorkflowId = (candidateId: string) => `merge-${candidateId}`;

/**
 * Started for `node.created` of a person-type node (`resolve-<node_id>`). A finished run is not
 * repeated (only a failed one is), so redelivering the event starts nothing new.
 */
export const personResolverWorkflow = defineWorkflow<[Omit<ResolvePersonInput, 'workflowId'>], ResolvePersonResult>({
  type: 'personResolverWorkflow',
  id: (input) => resolveWorkflowId(input.nodeId),
  workspaceId: (input) => input.workspaceId,
  idReusePolicy: 'ALLOW_DUPLICATE_FAILED_ONLY',
});

/** The contract sets no deadline for a review; it wakes up this often to check its candidate. */
export const DEFAULT_REVIEW_CHECK_INTERVAL = '7 days';

/** One merge candidate awaiting review (`merge-<candidate_id>`). */
export const mergeCandidateWorkflow = defineWorkflow<[MergeWorkflowInput], MergeWorkflowResult>({
  type: 'mergeCandidateWorkflow',
  id: (input) => mergeWorkflowId(input.candidateId),
  workspaceId: (input) => input.workspaceId,
  // A review already running (or finished) for this candidate is the one that counts.
  idReusePolicy: 'REJECT_DUPLICATE',
});

/**
 * A reviewer's approve or reject; answers with the applied decision, or fails with a domain error
 * (not_found, conflict, unavailable) carried as an ApplicationFailure typed by its code.
 */
export const decideMergeUpdate = defineUpdate<MergeDecisionResponse, [MergeDecision]>('decideMerge');
/** The candidate was resolved elsewhere (superseded by another merge): stop waiting. */
export const closeMergeSignal = defineSignal<[{ reason: string }]>('closeMerge');
export const mergeStatusQuery = defineQuery<MergeReviewStatus>('mergeStatus');
