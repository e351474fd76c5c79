import { WorkflowUpdateFailedError } from '@temporalio/client';
import { reserveCredits } from '../credits/repository';
import { LIMITS } from '../limits';
import { readOntologyConfig } from '../ontology-config/service';
import type { Principal } from '../platform/auth/principal';
import { scopeOf } from '../platform/auth/principal';
import type { UnitOfWork } from '../platform/db/unit-of-work';
import type { DomainError } from '../platform/errors';
import { ConflictError, NotFoundError, UnavailableError } from '../platform/errors';
import type { TemporalHandle } from '../platform/temporal/connection';
import { findFailureDetails, toDomainError } from '../platform/temporal/failures';
import { scoreMatch, shouldAutoMerge } from './person-rules';
import {
  candidateStatus,
  findMatchingPeople,
  listPendingCandidates,
  loadLiveNodeKeys,
  mergeCandidate,
  rejectCandidate,
  tenantOfWorkspace,
  upsertCandidate,
} from './repository';
import type { MergeDecisionBody, MergeDecisionResponse, MergeListQuery } from './schemas';
import type {
  DecisionOutcome,
  MergeDecision,
  MergeWorkflowInput,
  ResolvePersonInput,
  ResolvePersonResult,
} from './types';
import { decideMergeUpdate, mergeCandidateWorkflow } from './workflow';

const skipped = (status: ResolvePersonResult['status']): ResolvePersonResult => ({
  status,
  pendingCandidateIds: [],
  autoMergedCandidateId: null,
  supersededCandidateIds: [],
});

function refusalOf(outcome: Extract<DecisionOutcome, { ok: false }>): DomainError {
  if (outcome.code === 'not_found') return new NotFoundError(outcome.detail);
  if (outcome.code === 'conflict') return new ConflictError(outcome.detail);
  return new UnavailableError(outcome.detail, 1);
}

/**
 * Person resolution and the merge queue. The API side reads the queue and hands a reviewer's
 * decision to the candidate's workflow; the worker side (through activities) does the work, each
 * step in one unit of work of the candidate's workspace.
 */
export function createMergeService(deps: { uow: UnitOfWork; temporal: TemporalHandle }) {
  const { uow, temporal } = deps;

  /**
   * Checks the candidate in the caller's workspace (another workspace's id is 404, as is an
   * unknown one), then delivers the decision to `merge-<id>` with update-with-start: the review
   * workflow normally exists already, and is started here if it was somehow lost.
   */
  async function decide(
    principal: Principal,
    candidateId: string,
    decision: MergeDecision['decision'],
    body: MergeDecisionBody,
  ) {
    const status = await uow(scopeOf(principal), (m) => candidateStatus(m, candidateId));
    if (!status) throw new NotFoundError('Merge candidate not found');
    if (status !== 'pending') throw new ConflictError(`Merge candidate is already ${status}`);

    const input: MergeWorkflowInput = { workspaceId: principal.workspaceId, candidateId };
    let outcome: DecisionOutcome;
    try {
      outcome = await temporal.workflows.executeUpdateWithStart(
        mergeCandidateWorkflow,
        decideMergeUpdate,
        [{ decision, workspaceId: principal.workspaceId, userId: principal.userId, notes: body.notes ?? null }],
        input,
      );
    } catch (error) {
      // The workflow's validator refused the update: someone else's decision got there first.
      const refused = error instanceof WorkflowUpdateFailedError ? findFailureDetails(error) : undefined;
      throw refused ? toDomainError(refused) : error;
    }
    if (!outcome.ok) throw refusalOf(outcome);
    return outcome.response;
  }

  return {
    list: (principal: Principal, query: MergeListQuery) =>
      uow(scopeOf(principal), (m) => listPendingCandidates(m, query)),

    approve: (principal: Principal, candidateId: string, body: MergeDecisionBody): Promise<MergeDecisionResponse> =>
      decide(principal, candidateId, 'approve', body),

    reject: (principal: Principal, candidateId: string, body: MergeDecisionBody): Promise<MergeDecisionResponse> =>
      decide(principal, candidateId, 'reject', body),

    /**
     * One resolver pass for a node, in one transaction: charge worker.person_resolve (0 credits,
     * keyed by the workflow id), match live people of the workspace, upsert a candidate per match
     * (the older node survives), and auto-merge the strongest one when the workspace allows it.
     * Repeating it is harmless: candidates are upserted, a merged node is no longer live.
     */
    resolvePerson: (input: ResolvePersonInput): Promise<ResolvePersonResult> =>
      uow({ workspaceId: input.workspaceId }, async (m) => {
        const config = await readOntologyConfig(m);
        if (!config.resolver.person_resolver_enabled) return skipped('disabled');
        const node = await loadLiveNodeKeys(m, input.nodeId);
        if (!node) return skipped('node_not_live');
        if (!node.is_person) return skipped('not_a_person');

        await reserveCredits(m, {
          tenantId: await tenantOfWorkspace(m, input.workspaceId),
          workspaceId: input.workspaceId,
          kind: 'worker.person_resolve',
          idempotencyKey: input.workflowId,
        });

        const matches = await findMatchingPeople(m, {
          workspaceId: input.workspaceId,
          node,
          limit: LIMITS.merges.matchesPerNode,
        });
        const candidates: { id: string; score: number }[] = [];
        for (const match of matches) {
          const scored = scoreMatch(match);
          if (!scored) continue;
          const nodeIsOlder =
            node.created_at.getTime() < match.created_at.getTime() ||
            (node.created_at.getTime() === match.created_at.getTime() && node.id < match.id);
          const upserted = await upsertCandidate(m, {
            workspaceId: input.workspaceId,
            survivorId: nodeIsOlder ? node.id : match.id,
            duplicateId: nodeIsOlder ? match.id : node.id,
            reasons: scored.reasons,
            score: scored.score,
          });
          if (upserted) candidates.push({ id: upserted.id, score: scored.score });
        }

        // Matches come strongest first, so the first candidate is the one to auto-merge.
        const best = candidates[0];
        if (best && shouldAutoMerge(best.score, config.resolver)) {
          const outcome = await mergeCandidate(m, {
            candidateId: best.id,
            performedBy: null,
            notes: null,
            importance: config.importance,
          });
          if (outcome.ok) {
            const superseded = outcome.response.merge?.superseded_candidate_ids ?? [];
            return {
              status: 'resolved',
              pendingCandidateIds: candidates
                .map((c) => c.id)
                .filter((id) => id !== best.id && !superseded.includes(id)),
              autoMergedCandidateId: best.id,
              supersededCandidateIds: superseded,
            };
          }
          // Refused: a concurrent pass resolved it first, so it no longer needs a review.
          candidates.shift();
        }
        return {
          status: 'resolved',
          pendingCandidateIds: candidates.map((c) => c.id),
          autoMergedCandidateId: null,
          supersededCandidateIds: [],
        };
      }),

    /** A reviewer's decision, applied in one transaction as that reviewer. */
    applyDecision: (input: MergeDecision & { candidateId: string }): Promise<DecisionOutcome> =>
      uow({ workspaceId: input.workspaceId, userId: input.userId }, async (m) => {
        if (input.decision === 'reject') {
          return rejectCandidate(m, { candidateId: input.candidateId, performedBy: input.userId, notes: input.notes });
        }
        const { importance } = await readOntologyConfig(m);
        return mergeCandidate(m, {
          candidateId: input.candidateId,
          performedBy: input.userId,
          notes: input.notes,
          importance,
        });
      }),

    candidateStatus: (input: MergeWorkflowInput) =>
      uow({ workspaceId: input.workspaceId }, (m) => candidateStatus(m, input.candidateId)),
  };
}

export type MergeService = ReturnType<typeof createMergeService>;
