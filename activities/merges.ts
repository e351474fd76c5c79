import type { MergeService } from '../src/merges/service';
import type { MergeDecision, MergeWorkflowInput, ResolvePersonInput } from '../src/merges/types';

/**
 * Thin adapters over the merge service; every step is one transaction and safe to repeat. Domain
 * refusals (not found, conflict) cross Temporal as ApplicationFailures typed by their code and are
 * not retried; anything else is retried under the workflow's activity options.
 */
export function createMergeActivities(deps: { services: { merges: MergeService } }) {
  const { merges } = deps.services;
  return {
    /** Match, upsert candidates, auto-merge when configured; charges worker.person_resolve once per workflow. */
    resolvePerson: (input: ResolvePersonInput) => merges.resolvePerson(input),
    /** Applies a reviewer's approve or reject in one transaction. */
    decideMergeCandidate: (input: MergeDecision & { candidateId: string }) => merges.applyDecision(input),
    /** At a review's wake-up: the candidate's status, superseded first when one of its nodes is gone. */
    mergeCandidateStatus: (input: MergeWorkflowInput) => merges.reviewCandidateStatus(input),
  };
}
