import type { Duration } from '@temporalio/common';

/** A reviewer's decision as it travels from the API to the candidate's workflow. */
export interface MergeDecision {
  decision: 'approve' | 'reject';
  workspaceId: string;
  userId: string;
  notes: string | null;
}

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
  /**
   * How often the review wakes up to check that its candidate is still pending (a lost close
   * signal must not keep it open for ever) and continues as new. Default '7 days'
   * (`DEFAULT_REVIEW_CHECK_INTERVAL` in workflow.ts); tests pass seconds.
   */
  reviewCheckInterval?: Duration;
}

/**
 * Where a review stands: `pending` until a decision arrives, `deciding` while it is applied,
 * then `applied` or `rejected`; `closed` when the candidate was resolved some other way (refused
 * decision, superseded by another merge, a node deleted).
 */
export type MergeReviewStatus = 'pending' | 'deciding' | 'applied' | 'rejected' | 'closed';

export type MergeWorkflowResult =
  | { status: 'applied' | 'rejected'; performedBy: string }
  | { status: 'closed'; reason: string };
