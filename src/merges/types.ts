import type { MergeDecisionResponse } from './schemas';

/** A reviewer's decision as it travels from the API to the candidate's workflow. */
export interface MergeDecision {
  decision: 'approve' | 'reject';
  workspaceId: string;
  userId: string;
  notes: string | null;
}

/**
 * What applying a decision came to. Domain refusals are values, not failures, so they cross
 * Temporal unchanged and the API maps them to 404 / 409; `unavailable` means the activity kept
 * failing and the reviewer may try again.
 */
export type DecisionOutcome =
  | { ok: true; response: MergeDecisionResponse }
  | { ok: false; code: 'not_found' | 'conflict' | 'unavailable'; detail: string };

export interface ResolvePersonInput {
  workspaceId: string;
  nodeId: string;
  /** Keys the (zero-credit) charge, so a retried activity charges once. */
  workflowId: string;
}

export interface ResolvePersonResult {
  status: 'resolved' | 'disabled' | 'not_a_person' | 'node_not_live';
  /** Candidates still waiting for a reviewer after this pass: each gets a `merge-<id>` workflow. */
  pendingCandidateIds: string[];
  /** The candidate merged at once when auto-merge applied. */
  autoMergedCandidateId: string | null;
  /** Pending candidates closed by that merge, whose workflows should stop waiting. */
  supersededCandidateIds: string[];
}

export interface MergeWorkflowInput {
  workspaceId: string;
  candidateId: string;
}

export type MergeWorkflowResult =
  | { status: 'applied' | 'rejected'; performedBy: string }
  | { status: 'closed'; reason: string };
