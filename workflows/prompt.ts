import {
  ActivityFailure,
  CancellationScope,
  isCancellation,
  log,
  proxyActivities,
  proxyLocalActivities,
  TimeoutFailure,
  workflowInfo,
} from '@temporalio/workflow';
import type { Activities } from '../activities';
import type { FailureDetails } from '../src/platform/temporal/failures';
import { findFailureDetails, toApplicationFailure } from '../src/platform/temporal/failures';
import type { GroundedAnswer, Intent } from '../src/prompt/model/contract';
import type { PromptWorkflowInput, PromptWorkflowResult } from '../src/prompt/workflow';
import type { PersistedGraph } from '../src/prompt/writes';
import { databaseLocalActivity, modelActivity } from './activity-options';

const db = proxyLocalActivities<Activities>(databaseLocalActivity);
const model = proxyActivities<Activities>(modelActivity);

const NOTHING_PERSISTED: PersistedGraph = { nodes: [], edges: [], nodes_created: 0, edges_created: 0 };

/** The domain failure behind `error`, for the audit row and the caller; a model timeout is the provider's. */
function describeFailure(error: unknown): FailureDetails {
  const carried = findFailureDetails(error);
  if (carried) return carried;
  if (isCancellation(error)) {
    return {
      code: 'unavailable',
      errorClass: 'CancelledFailure',
      detail: 'The prompt was cancelled: nothing it wrote remains and its credits were refunded',
    };
  }
  const cause = error instanceof ActivityFailure ? error.cause : error;
  if (cause instanceof TimeoutFailure) {
    return { code: 'upstream_unavailable', errorClass: 'TimeoutFailure', detail: 'The model did not answer in time' };
  }
  return {
    code: 'internal',
    errorClass: cause instanceof Error ? cause.name : 'Error',
    detail: 'Internal server error',
  };
}

/**
 * The prompt pipeline as a saga (knowledge-graph-service-api.md §4.1, prompt rules): classify → reserve → refine →
 * persist → answer → audit. Each step that changes something registers its undo; on any failure
 * the undos run in reverse, the failure is audited, and the original error is re-raised.
 */
export async function promptWorkflow(input: PromptWorkflowInput): Promise<PromptWorkflowResult> {
  const { workspaceId, correlationId } = input;
  const audit = {
    workspaceId,
    correlationId,
    promptKind: input.promptKind,
    sourceHash: input.sourceHash,
    requestHash: input.requestHash,
    startedAtMs: input.startedAtMs,
  };
  const compensations: (() => Promise<unknown>)[] = [];
  let intent = input.forceIntent;
  let ledgerId: string | null = null;
  try {
    const classified: Intent =
      input.forceIntent ?? (await model.classifyPrompt({ workspaceId, correlationId, prompt: input.prompt }));
    intent = classified;
    const receipt = await db.reservePromptCredits({
      workspaceId,
      correlationId,
      intent: classified,
      idempotencyKey: `${workflowInfo().workflowId}:reserve`,
    });
    ledgerId = receipt.ledger_id;
    compensations.push(() => db.refundPromptCredits({ workspaceId, ledgerId: receipt.ledger_id }));

    let persisted = NOTHING_PERSISTED;
    if (classified !== 'query') {
      const refined = await model.refinePrompt({
        workspaceId,
        correlationId,
        prompt: input.prompt,
        promptKind: input.promptKind,
      });
      // Registered before the step, unlike the others: persisting commits in one transaction, and a
      // worker lost between that commit and the step's completion must still be undone. Undoing
      // a prompt that wrote nothing is a no-op.
      compensations.push(() => db.undoPromptWrites({ workspaceId, correlationId }));
      persisted = await db.persistPromptGraph({
        workspaceId,
        correlationId,
        refined,
        ...(input.actor ? { actor: input.actor } : {}),
        // Only the activity's behaviour differs when staging: the workflow's commands stay the same.
        ...(input.stage ? { stage: true } : {}),
      });
    }

    let answer: GroundedAnswer | null = null;
    if (classified !== 'update')
      answer = await model.answerPrompt({ workspaceId, correlationId, prompt: input.prompt });

    const result: PromptWorkflowResult = {
      correlation_id: correlationId,
      intent: classified,
      ...persisted,
      answer: answer?.answer ?? null,
      citations: answer?.citations ?? [],
      credit_receipt: receipt,
    };
    // Also emits node.created for the nodes the prompt created, now that they stay.
    await db.completePromptRun({
      ...audit,
      intent: classified,
      answer,
      nodesCreated: persisted.nodes_created,
      edgesCreated: persisted.edges_created,
      creditsUsed: receipt.amount,
      ledgerId: receipt.ledger_id,
    });
    return result;
  } catch (error) {
    const failure = describeFailure(error);
    // Compensation runs to the end even when the workflow itself is being cancelled: in a
    // cancelled scope every undo would fail at once and the credits would stay charged.
    await CancellationScope.nonCancellable(async () => {
      for (const undo of compensations.reverse()) {
        try {
          await undo();
        } catch (undoError) {
          log.error('prompt compensation failed', { correlationId, error: String(undoError) });
        }
      }
      // An intent is required on the audit row; a prompt that failed before classification is
      // recorded as a query, the pipeline every prompt runs at least.
      await db.failPromptRun({ ...audit, intent: intent ?? 'query', failure, ledgerId });
    });
    // A cancelled execution ends as cancelled (what an operator asked for), after compensating.
    if (isCancellation(error)) throw error;
    throw toApplicationFailure(failure);
  }
}
