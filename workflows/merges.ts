import { WorkflowExecutionAlreadyStartedError } from '@temporalio/common';
import {
  allHandlersFinished,
  condition,
  continueAsNew,
  getExternalWorkflowHandle,
  log,
  ParentClosePolicy,
  proxyActivities,
  setHandler,
  startChild,
  WorkflowIdReusePolicy,
  workflowInfo,
} from '@temporalio/workflow';
import type { Activities } from '../activities';
import type {
  DecisionOutcome,
  MergeDecision,
  MergeWorkflowInput,
  MergeWorkflowResult,
  ResolvePersonInput,
  ResolvePersonResult,
} from '../src/merges/types';
import * as contract from '../src/merges/workflow';
import { toApplicationFailure } from '../src/platform/temporal/failures';
import { databaseActivity, interactiveActivity } from './activity-options';

const { resolvePerson, mergeCandidateStatus } = proxyActivities<Activities>(databaseActivity);
const { decideMergeCandidate } = proxyActivities<Activities>(interactiveActivity);

// The contract sets no deadline for a review. The workflow wakes this often to check that its
// candidate is still pending (a lost close signal must not keep it open for ever) and then
// continues as new, so its history stays small however long the review takes.
const REVIEW_CHECK_INTERVAL = '7 days';

/**
 * Started for `node.created` of a person-type node (id `resolve-<node_id>`). One activity matches,
 * upserts candidates and auto-merges in a single transaction; each candidate left pending gets
 * its own `merge-<candidate_id>` workflow, abandoned so that it outlives this one.
 */
export async function personResolverWorkflow(
  input: Omit<ResolvePersonInput, 'workflowId'>,
): Promise<ResolvePersonResult> {
  const info = workflowInfo();
  const result = await resolvePerson({ ...input, workflowId: info.workflowId });
  for (const candidateId of result.pendingCandidateIds) {
    try {
      await startChild(mergeCandidateWorkflow, {
        workflowId: contract.mergeWorkflowId(candidateId),
        args: [{ workspaceId: input.workspaceId, candidateId }],
        parentClosePolicy: ParentClosePolicy.ABANDON,
        // A review already running (or finished) for this candidate is the one that counts.
        workflowIdReusePolicy: WorkflowIdReusePolicy.REJECT_DUPLICATE,
        typedSearchAttributes: info.typedSearchAttributes,
      });
    } catch (error) {
      if (!(error instanceof WorkflowExecutionAlreadyStartedError)) throw error;
    }
  }
  await closeSuperseded(result.supersededCandidateIds);
  return result;
}

/**
 * One merge candidate awaiting review (id `merge-<candidate_id>`). A reviewer's decision arrives
 * as the `decideMerge` update; its handler applies it through one activity (one transaction) and
 * answers the API with the outcome. A refused decision (already resolved, node gone) ends the
 * review too; an activity that keeps failing leaves it open for another attempt.
 */
export async function mergeCandidateWorkflow(input: MergeWorkflowInput): Promise<MergeWorkflowResult> {
  let deciding = false;
  let finished: { outcome: DecisionOutcome; decision: MergeDecision } | undefined;
  let closedReason: string | undefined;

  setHandler(contract.mergeStatusQuery, () => {
    if (finished)
      return finished.outcome.ok ? (finished.decision.decision === 'approve' ? 'applied' : 'rejected') : 'closed';
    if (closedReason) return 'closed';
    return deciding ? 'deciding' : 'pending';
  });
  setHandler(contract.closeMergeSignal, ({ reason }) => {
    closedReason ??= reason;
  });
  setHandler(
    contract.decideMergeUpdate,
    async (decision) => {
      deciding = true;
      try {
        const outcome = await decideMergeCandidate({ ...decision, candidateId: input.candidateId });
        finished = { outcome, decision };
        return outcome;
      } catch (error) {
        log.warn('merge decision failed; the review stays open', { error: String(error) });
        return { ok: false, code: 'unavailable', detail: 'The merge could not be applied; try again' } as const;
      } finally {
        deciding = false;
      }
    },
    {
      validator: (decision) => {
        // Defence in depth: the API already resolved the candidate inside the caller's workspace.
        if (decision.workspaceId !== input.workspaceId) {
          throw toApplicationFailure({
            code: 'not_found',
            errorClass: 'NotFoundError',
            detail: 'Merge candidate not found',
          });
        }
        if (deciding || finished || closedReason) {
          throw toApplicationFailure({
            code: 'conflict',
            errorClass: 'ConflictError',
            detail: 'Merge candidate is already being resolved or resolved',
          });
        }
      },
    },
  );

  for (;;) {
    if (await condition(() => finished !== undefined || closedReason !== undefined, REVIEW_CHECK_INTERVAL)) break;
    const status = await mergeCandidateStatus(input);
    if (finished || closedReason) break;
    if (status !== 'pending') {
      closedReason = `candidate is ${status ?? 'gone'}`;
      break;
    }
    await condition(allHandlersFinished);
    if (!finished && !closedReason) return continueAsNew<typeof mergeCandidateWorkflow>(input);
  }
  await condition(allHandlersFinished);

  if (finished?.outcome.ok) {
    await closeSuperseded(finished.outcome.response.merge?.superseded_candidate_ids ?? []);
    return {
      status: finished.outcome.response.candidate.status as 'applied' | 'rejected',
      performedBy: finished.decision.userId,
    };
  }
  return {
    status: 'closed',
    reason: closedReason ?? (finished?.outcome.ok === false ? finished.outcome.detail : 'closed'),
  };
}

/** Best effort: a superseded candidate may never have had a workflow, or it may have ended. */
async function closeSuperseded(candidateIds: readonly string[]): Promise<void> {
  for (const candidateId of candidateIds) {
    try {
      await getExternalWorkflowHandle(contract.mergeWorkflowId(candidateId)).signal(contract.closeMergeSignal, {
        reason: 'superseded',
      });
    } catch {
      log.info('no open review to close', { candidateId });
    }
  }
}
