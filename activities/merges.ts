import type { MergeService } from '../src/merges/service';
import type { MergeDecision, MergeWorkflowInput, ResolvePersonInput } from '../src/merges/types';

/** Thin adapters over the merge service; every step is one transaction and safe to repeat. */
export function createMergeActivities(deps: { services: { merges: MergeService } }) {
  const { merges } = deps.services;
  return {
    /** Match, upsert candidates, auto-merge when configured; charges worker.person_resolve once per workflow. */
    async resolvePerson(input: ResolvePersonInput) {
      return merges.resolvePerson(input);
    },
    /** Applies a reviewer's approve or reject in one transaction. */
    async decideMergeCandidate(input: MergeDecision & { candidateId: string }) {
      return merges.applyDecision(input);
    },
    async mergeCandidateStatus(input: MergeWorkflowInput) {
      return merges.candidateStatus(input);
    },
  };
}
