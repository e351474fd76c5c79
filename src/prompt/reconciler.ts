import type { WorkflowExecutionStatusName } from '@temporalio/client';
import { WorkflowNotFoundError } from '@temporalio/client';
import type { DataSource } from 'typeorm';
import type { UnitOfWork } from '../platform/db/unit-of-work';
import type { Logger } from '../platform/logger';
import type { TemporalHandle } from '../platform/temporal/connection';
import type { FailureDetails } from '../platform/temporal/failures';
import { forEachWorkspace } from '../platform/workspace-sweep';
import { workspaceIdsAfter } from '../tenancy/repository';
import type { UnsettledPrompt } from './repository';
import { unsettledPrompts } from './repository';
import type { PromptService } from './service';
import { promptWorkflowId } from './workflow';

const WORKSPACE_BATCH = 500;

/** What Temporal says of an execution; GONE when it has none (retention, or never started). */
type ExecutionStatus = WorkflowExecutionStatusName | 'GONE';
const CANDIDATES_PER_WORKSPACE = 100;

/**
 * The executions whose runs this pass may settle: closed without the saga's compensation
 * (terminated, timed out), or with it cut short (cancelled, failed while refunding), or gone
 * (retention, or a start that never happened). A running or completed execution is never touched:
 * one that completes after the candidates were read is still COMPLETED when described.
 */
const SETTLEABLE = new Set<ExecutionStatus>(['TERMINATED', 'TIMED_OUT', 'CANCELLED', 'FAILED', 'GONE']);

const ABANDONED: FailureDetails = {
  code: 'internal',
  errorClass: 'WorkflowClosedWithoutCompensation',
  detail: 'The prompt ended without finishing: nothing it wrote remains and its credits were refunded',
};

/**
 * Settles prompt runs that ended without settling themselves, every step idempotent so that
 * overlapping passes are harmless. A prompt whose `prompt-<correlation_id>` execution closed
 * without compensating gets what the compensation would have done: its writes undone, its
 * reservation refunded, the failure audited. A stream (no workflow; it settles in the API
 * process) is settled once it is older than `minAgeSeconds`, which outlasts any stream: its
 * process died. Settling re-checks under the reservation's row lock, which completing takes too.
 */
export function createPromptReconciler(deps: {
  dataSource: DataSource;
  uow: UnitOfWork;
  temporal: TemporalHandle;
  prompts: PromptService;
  logger: Logger;
}) {
  const { dataSource, uow, temporal, prompts, logger } = deps;

  async function executionStatus(workflowId: string): Promise<ExecutionStatus> {
    try {
      return (await temporal.client.workflow.getHandle(workflowId).describe()).status.name;
    } catch (error) {
      if (error instanceof WorkflowNotFoundError) return 'GONE';
      throw error;
    }
  }

  /** Step one: a workspace's runs older than `minAgeSeconds` that may need settling. */
  const candidates = (workspaceId: string, minAgeSeconds: number) =>
    uow({ workspaceId }, (m) => unsettledPrompts(m, minAgeSeconds, CANDIDATES_PER_WORKSPACE));

  /** Step two: settles one candidate unless its execution may still settle it; true when settled. */
  async function settle(workspaceId: string, run: UnsettledPrompt): Promise<boolean> {
    // A claim that reserved nothing is described too: a stream's has no execution (GONE).
    if (!run.streamed && !SETTLEABLE.has(await executionStatus(promptWorkflowId(run.correlation_id)))) return false;
    const { settled } = await prompts.abandon({
      workspaceId,
      correlationId: run.correlation_id,
      promptKind: run.prompt_kind,
      sourceHash: run.source_hash,
      requestHash: run.request_hash,
      intent: run.intent,
      startedAtMs: run.created_at.getTime(),
      ledgerId: run.ledger_id,
      failure: ABANDONED,
    });
    if (settled) {
      logger.warn(
        { workspace_id: workspaceId, correlation_id: run.correlation_id, stream: run.streamed },
        'settled an abandoned prompt run',
      );
    }
    return settled;
  }

  return {
    candidates,
    settle,

    /**
     * Every workspace, in batches. `onProgress` runs after each workspace and each candidate, so
     * the activity heartbeats through a long pass instead of timing out and restarting from the first.
     */
    async settleAll(input: { minAgeSeconds: number }, onProgress: () => void = () => {}): Promise<{ settled: number }> {
      let settled = 0;
      await forEachWorkspace(
        {
          job: 'prompt reconcile',
          page: (after) => workspaceIdsAfter(dataSource, after, WORKSPACE_BATCH),
          heartbeat: () => onProgress(),
          warn: (fields, message) => logger.warn(fields, message),
        },
        async (workspaceId, report) => {
          for (const run of await candidates(workspaceId, input.minAgeSeconds)) {
            if (await settle(workspaceId, run)) settled += 1;
            report({});
          }
        },
      );
      return { settled };
    },
  };
}

export type PromptReconciler = ReturnType<typeof createPromptReconciler>;
