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
  MergeWorkflowInput,
  MergeWorkflowResult,
  ResolvePersonInput,
  ResolvePersonResult,
} from '../src/merges/types';
import * as contract from '../src/merges/workflow';
import type { DomainError, ErrorCode } from '../src/platform/errors';
import { ConflictError, NotFoundError, UnavailableError } from '../src/platform/errors';
import { detailsOf, findFailureDetails, toApplicationFailure } from '../src/platform/temporal/failures';
import { KIND_ATTRIBUTE, workflowKind } from '../src/platform/temporal/search-attributes';
import { databaseActivity, interactiveActivity } from './activity-options';

const { resolvePerson, mergeCandidateStatus } = proxyActivities<Activities>(databaseActivity);
const { decideMergeCandidate } = proxyActivities<Activities>(interactiveActivity);

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
        // The parent's workspace, and the child's own kind (WeftKind).
        typedSearchAttributes: info.typedSearchAttributes.updateCopy([
          { key: KIND_ATTRIBUTE, value: workflowKind('mergeCandidateWorkflow') },
        ]),
      });
    } catch (error) {
      if (!(error instanceof WorkflowExecutionAlreadyStartedError)) throw error;
    }
  }
  await closeSuperseded(result.supersededCandidateIds);
  return result;
}

/**
 * Where the review stands: the one variable of its state machine. Handlers change it; only the
 * main loop below decides when the review ends.
 */
type Review =
  | { status: 'pending' | 'deciding' }
  | { status: 'applied' | 'rejected'; performedBy: string; superseded: string[] }
  | { status: 'closed'; reason: string };
type EndedReview = Exclude<Review, { status: 'pending' | 'deciding' }>;

const isEnded = (review: Review): review is EndedReview =>
  review.status === 'applied' || review.status === 'rejected' || review.status === 'closed';

const DECIDED = { approve: 'applied', reject: 'rejected' } as const;

/** Refusals that end the review: the candidate is gone or already resolved. */
const REFUSALS: readonly ErrorCode[] = ['not_found', 'conflict'];

// How soon a reviewer may retry a decision that could not be applied.
const RETRY_DECISION_AFTER_SECONDS = 5;

const failureOf = (error: DomainError) => toApplicationFailure(detailsOf(error), error.message);

/**
 * One merge candidate awaiting review (id `merge-<candidate_id>`). A reviewer's decision arrives
 * as the `decideMerge` update; its handler applies it through one activity (one transaction) and
 * answers the API with the result, or fails with the refusal's domain error (404, 409), which
 * also ends the review. An activity that keeps failing answers `unavailable` (503) and leaves the
 * review pending for another attempt.
 *
 * The contract sets no deadline for a review: it wakes up every `reviewCheckInterval` to check
 * that its candidate is still pending (a lost close signal, a deleted node), closes itself if not,
 * and otherwise continues as new, so its history stays small however long the review takes.
 */
export async function mergeCandidateWorkflow(input: MergeWorkflowInput): Promise<MergeWorkflowResult> {
  // Widened on purpose: the handlers change it, which the compiler's narrowing cannot see.
  let review = { status: 'pending' } as Review;

  setHandler(contract.mergeStatusQuery, () => review.status);
  setHandler(contract.closeMergeSignal, ({ reason }) => {
    // A decision in flight settles the review itself.
    if (review.status === 'pending') review = { status: 'closed', reason };
  });
  setHandler(
    contract.decideMergeUpdate,
    async (decision) => {
      review = { status: 'deciding' };
      try {
        const response = await decideMergeCandidate({ ...decision, candidateId: input.candidateId });
        const superseded = response.merge?.superseded_candidate_ids ?? [];
        review = { status: DECIDED[decision.decision], performedBy: decision.userId, superseded };
        return response;
      } catch (error) {
        const refused = findFailureDetails(error);
        if (refused && REFUSALS.includes(refused.code)) {
          review = { status: 'closed', reason: String(refused.detail) };
          throw toApplicationFailure(refused);
        }
        log.warn('merge decision failed; the review stays open', { error: String(error) });
        review = { status: 'pending' };
        throw failureOf(
          new UnavailableError('The merge could not be applied just now; try again', RETRY_DECISION_AFTER_SECONDS),
        );
      }
    },
    {
      validator: (decision) => {
        // Defence in depth: the API already resolved the candidate inside the caller's workspace.
        if (decision.workspaceId !== input.workspaceId) throw failureOf(new NotFoundError('Merge candidate not found'));
        if (review.status !== 'pending') {
          throw failureOf(new ConflictError('Merge candidate is already being resolved or resolved'));
        }
      },
    },
  );

  const interval = input.reviewCheckInterval ?? contract.DEFAULT_REVIEW_CHECK_INTERVAL;
  while (!isEnded(review)) {
    if (await condition(() => isEnded(review), interval)) continue;
    // The wake-up. A decision may arrive while the status is read; it settles the review then.
    const status = await mergeCandidateStatus(input);
    if (review.status === 'pending' && status !== 'pending') {
      review = { status: 'closed', reason: `candidate is ${status ?? 'gone'}` };
    }
    if (review.status === 'pending' && allHandlersFinished()) {
      return continueAsNew<typeof mergeCandidateWorkflow>(input);
    }
  }
  const ended = review;
  await condition(allHandlersFinished);
  if (ended.status === 'closed') return { status: 'closed', reason: ended.reason };
  await closeSuperseded(ended.superseded);
  return { status: ended.status, performedBy: ended.performedBy };
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
