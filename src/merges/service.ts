import { WorkflowUpdateRPCTimeoutOrCancelledError } from '@temporalio/client';
import { WorkflowExecutionAlreadyStartedError } from '@temporalio/common';
import type { EntityManager } from 'typeorm';
import { reserveCredits } from '../credits/repository';
import type { ImportanceSettings } from '../ontology-config/schemas';
import { readOntologyConfig } from '../ontology-config/service';
import type { Principal } from '../platform/auth/principal';
import { scopeOf } from '../platform/auth/principal';
import type { UnitOfWork } from '../platform/db/unit-of-work';
import { ConflictError, DeadlineExceededError, NotFoundError } from '../platform/errors';
import type { TemporalHandle } from '../platform/temporal/connection';
import { findFailureDetails, toDomainError } from '../platform/temporal/failures';
import { LIMITS } from '../rules/limits';
import {
  candidateStatus,
  listPendingCandidates,
  listResolvedCandidates,
  lockCandidate,
  pairIsLive,
  supersedeIfPending,
  unmergedEvidenceFor,
  upsertCandidate,
} from './candidates-repository';
import { mergeCandidate, rejectCandidate } from './decisions';
import { PairNotLiveError } from './errors';
import { findMatchingPeople, loadLiveNodeKeys, tenantOfWorkspace } from './people-repository';
import { pairEvidence, sameEvidence, scoreMatch, shouldAutoMerge } from './person-rules';
import type {
  MergeDecisionBody,
  MergeDecisionResponse,
  MergeHistory,
  MergeListQuery,
  UnmergeResponse,
} from './schemas';
import type { MergeDecision, MergeWorkflowInput, ResolvePersonInput, ResolvePersonResult } from './types';
import { candidateHistory, unmergeCandidate } from './unmerge';
import { decideMergeUpdate, mergeCandidateWorkflow } from './workflow';

const skipped = (status: ResolvePersonResult['status']): ResolvePersonResult => ({
  status,
  pendingCandidateIds: [],
  autoMergedCandidateId: null,
  supersededCandidateIds: [],
});

/**
 * What a failed decision tells the client: the workflow's refusal as the domain error it carries
 * (404, 409, or 503 when the merge kept failing), or 504 when no worker answered in time.
 */
function decisionFailure(error: unknown): unknown {
  const refused = findFailureDetails(error);
  if (refused) return toDomainError(refused);
  // The review ended without resolving its candidate (an operator terminated it, say).
  if (error instanceof WorkflowExecutionAlreadyStartedError) {
    return new ConflictError('The review of this merge candidate has ended');
  }
  // Not 503: the server may still hand the admitted decision to a worker later.
  if (error instanceof WorkflowUpdateRPCTimeoutOrCancelledError) {
    return new DeadlineExceededError('The decision was not applied in time; check the candidate before retrying');
  }
  return error;
}

/**
 * Auto-merges the candidate in the resolver's transaction; answers the candidates that merge
 * superseded, or undefined when it was refused (a concurrent pass resolved it, or a node went
 * meanwhile), in which case it needs no review either. Refusals are thrown before any write, so
 * the transaction goes on.
 */
async function autoMerge(
  m: EntityManager,
  candidateId: string,
  importance: ImportanceSettings,
): Promise<string[] | undefined> {
  try {
    const response = await mergeCandidate(m, { candidateId, performedBy: null, notes: null, importance });
    return response.merge?.superseded_candidate_ids ?? [];
  } catch (error) {
    if (error instanceof PairNotLiveError) {
      await supersedeIfPending(m, candidateId);
      return undefined;
    }
    if (error instanceof ConflictError) return undefined;
    throw error;
  }
}

/**
 * Person resolution and the merge queue. The API side reads the queue and hands a reviewer's
 * decision to the candidate's workflow; the worker side (through activities) does the work, each
 * step in one unit of work of the candidate's workspace.
 */
export function createMergeService(deps: {
  uow: UnitOfWork;
  temporal: TemporalHandle;
  /** How long a decision waits for the worker (LIMITS.merges.decisionWaitMs unless a test says). */
  decisionWaitMs?: number;
}) {
  const { uow, temporal, decisionWaitMs = LIMITS.merges.decisionWaitMs } = deps;

  /**
   * Checks the candidate in the caller's workspace (another workspace's id is 404, as is an
   * unknown one), then delivers the decision to `merge-<id>` with update-with-start: the review
   * workflow normally exists already, and is started here if it was somehow lost. Waits at most
   * `decisionWaitMs` for the answer.
   */
  async function decide(
    principal: Principal,
    candidateId: string,
    decision: MergeDecision['decision'],
    body: MergeDecisionBody,
  ): Promise<MergeDecisionResponse> {
    const status = await uow(scopeOf(principal), (m) => candidateStatus(m, candidateId));
    if (!status) throw new NotFoundError('Merge candidate not found');
    if (status !== 'pending') throw new ConflictError(`Merge candidate is already ${status}`);

    const input: MergeWorkflowInput = { workspaceId: principal.workspaceId, candidateId };
    const request: MergeDecision = {
      decision,
      workspaceId: principal.workspaceId,
      userId: principal.userId,
      notes: body.notes ?? null,
    };
    try {
      return await temporal.client.withDeadline(Date.now() + decisionWaitMs, () =>
        temporal.workflows.executeUpdateWithStart(mergeCandidateWorkflow, decideMergeUpdate, [request], input),
      );
    } catch (error) {
      throw decisionFailure(error);
    }
  }

  return {
    list: (principal: Principal, query: MergeListQuery) =>
      uow(scopeOf(principal), (m) =>
        query.status === 'pending'
          ? listPendingCandidates(m, query)
          : listResolvedCandidates(m, { ...query, status: query.status }),
      ),

    /** One candidate (of the caller's workspace, else 404) with every action taken on it. */
    get: (principal: Principal, candidateId: string): Promise<MergeHistory> =>
      uow(scopeOf(principal), (m) => candidateHistory(m, candidateId)),

    /**
     * Undoes an applied merge (issue 31 part 3) as the caller, in one transaction under the
     * workspace's unit of work: the candidate's review workflow ended with the merge (an
     * auto-merge never had one), so unlike a decision there is no workflow to deliver it to.
     * The candidate's row lock serialises it with anything else done to the candidate.
     */
    unmerge: (principal: Principal, candidateId: string, body: MergeDecisionBody): Promise<UnmergeResponse> =>
      uow(scopeOf(principal), async (m) => {
        const { importance } = await readOntologyConfig(m);
        return unmergeCandidate(m, {
          candidateId,
          performedBy: principal.userId,
          notes: body.notes ?? null,
          importance,
        });
      }),

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
        // Pairs whose merge was undone are proposed again only once their evidence has changed.
        const undone = await unmergedEvidenceFor(m, node.id);
        const candidates: { id: string; score: number }[] = [];
        for (const match of matches) {
          const scored = scoreMatch(match);
          if (!scored) continue;
          const before = undone.get(match.id);
          if (
            before &&
            sameEvidence(
              before,
              pairEvidence(node, {
                email_key: match.email ? node.email_key : null,
                name_key: match.name ? node.name_key : null,
              }),
            )
          ) {
            continue;
          }
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
          const superseded = await autoMerge(m, best.id, config.importance);
          if (superseded) {
            return {
              status: 'resolved',
              pendingCandidateIds: candidates
                .map((c) => c.id)
                .filter((id) => id !== best.id && !superseded.includes(id)),
              autoMergedCandidateId: best.id,
              supersededCandidateIds: superseded,
            };
          }
          candidates.shift();
        }
        return {
          status: 'resolved',
          pendingCandidateIds: candidates.map((c) => c.id),
          autoMergedCandidateId: null,
          supersededCandidateIds: [],
        };
      }),

    /**
     * A reviewer's decision, applied in one transaction as that reviewer. Throws NotFoundError or
     * ConflictError when refused; a pair with a node gone is superseded (in its own transaction,
     * since the refused one rolled back) and refused as a conflict.
     */
    async applyDecision(input: MergeDecision & { candidateId: string }): Promise<MergeDecisionResponse> {
      const scope = { workspaceId: input.workspaceId, userId: input.userId };
      const { candidateId, userId: performedBy, notes } = input;
      try {
        return await uow(scope, async (m) => {
          if (input.decision === 'reject') return rejectCandidate(m, { candidateId, performedBy, notes });
          const { importance } = await readOntologyConfig(m);
          return mergeCandidate(m, { candidateId, performedBy, notes, importance });
        });
      } catch (error) {
        if (error instanceof PairNotLiveError) await uow(scope, (m) => supersedeIfPending(m, candidateId));
        throw error;
      }
    },

    /**
     * The candidate's status when its review wakes up; a pending candidate whose node was deleted
     * meanwhile is superseded first (nothing is left to merge), so the review can close.
     */
    reviewCandidateStatus: (input: MergeWorkflowInput) =>
      uow({ workspaceId: input.workspaceId }, async (m) => {
        const candidate = await lockCandidate(m, input.candidateId);
        if (!candidate) return null;
        if (candidate.status !== 'pending' || (await pairIsLive(m, candidate))) return candidate.status;
        await supersedeIfPending(m, candidate.id);
        return 'superseded' as const;
      }),
  };
}

export type MergeService = ReturnType<typeof createMergeService>;
