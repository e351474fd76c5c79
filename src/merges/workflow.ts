import { defineQuery, defineSignal, defineUpdate } from '@temporalio/workflow';
import { defineWorkflow } from '../platform/temporal/contract';
import type {
  DecisionOutcome,
  MergeDecision,
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

/** One merge candidate awaiting review (`merge-<candidate_id>`). */
export const mergeCandidateWorkflow = defineWorkflow<[MergeWorkflowInput], MergeWorkflowResult>({
  type: 'mergeCandidateWorkflow',
  id: (input) => mergeWorkflowId(input.candidateId),
  workspaceId: (input) => input.workspaceId,
  // A review already running (or finished) for this candidate is the one that counts.
  idReusePolicy: 'REJECT_DUPLICATE',
});

/** A reviewer's approve or reject; answers with what applying it came to. */
export const decideMergeUpdate = defineUpdate<DecisionOutcome, [MergeDecision]>('decideMerge');
/** The candidate was resolved elsewhere (superseded by another merge): stop waiting. */
export const closeMergeSignal = defineSignal<[{ reason: string }]>('closeMerge');
export const mergeStatusQuery = defineQuery<'pending' | 'deciding' | 'applied' | 'rejected' | 'closed'>('mergeStatus');
