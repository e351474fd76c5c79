import { WorkflowNotFoundError } from '@temporalio/client';
import type { DataSource } from 'typeorm';
import { refundCredits } from '../credits/ledger';
import type { UnitOfWork } from '../platform/db/unit-of-work';
import type { Logger } from '../platform/logger';
import type { TemporalHandle } from '../platform/temporal/connection';
import { workspaceIdsAfter } from '../tenancy/repository';
import type { Intent } from './model/contract';
import { PROMPT_CREDIT_KIND } from './model/contract';
import { unsettledReservations } from './repository';
import type { PromptService } from './service';
import { sourceHash } from './summary';

const INTENT_OF_KIND = Object.fromEntries(
  Object.entries(PROMPT_CREDIT_KIND).map(([intent, kind]) => [kind, intent as Intent]),
) as Record<string, Intent>;

const WORKSPACE_BATCH = 500;

/**
 * Settles prompt reservations whose workflow ended without running its compensation: a
 * terminated or timed-out execution skips the saga's catch block (Temporal runs no code then).
 * For each reservation older than `minAgeSeconds` with neither a refund nor an ok audit row,
 * and whose `prompt-<correlation_id>` execution is closed or gone, it does what the compensation
 * would have done: undo the prompt's writes, refund, and audit the failure. Every step is
 * idempotent, so overlapping passes are harmless.
 */
export function createPromptReconciler(deps: {
  dataSource: DataSource;
  uow: UnitOfWork;
  temporal: TemporalHandle;
  prompts: PromptService;
  logger: Logger;
}) {
  const { dataSource, uow, temporal, prompts, logger } = deps;

  async function isRunning(workflowId: string): Promise<boolean> {
    try {
      return (await temporal.client.workflow.getHandle(workflowId).describe()).status.name === 'RUNNING';
    } catch (error) {
      if (error instanceof WorkflowNotFoundError) return false;
      throw error;
    }
  }

  /** One workspace's reservations older than `minAgeSeconds` with no refund and no ok audit. */
  async function settleWorkspace(workspaceId: string, minAgeSeconds: number): Promise<number> {
    let settled = 0;
    const unsettled = await uow({ workspaceId }, (m) => unsettledReservations(m, minAgeSeconds));
    for (const row of unsettled) {
      const workflowId = row.idempotency_key.slice(0, -':reserve'.length);
      if (await isRunning(workflowId)) continue;
      const correlationId = workflowId.slice('prompt-'.length);
      await prompts.undo({ workspaceId, correlationId });
      await uow({ workspaceId }, (m) => refundCredits(m, { ledgerId: row.ledger_id }));
      await prompts.fail({
        workspaceId,
        correlationId,
        // What the workflow knew of the prompt did not survive it; the hash of nothing marks that.
        promptKind: 'unknown',
        sourceHash: sourceHash(''),
        intent: INTENT_OF_KIND[row.kind] ?? 'query',
        startedAtMs: Date.now(),
        errorCode: 'WorkflowClosedWithoutCompensation',
        ledgerId: row.ledger_id,
      });
      logger.warn({ workspace_id: workspaceId, workflow_id: workflowId }, 'settled an abandoned prompt reservation');
      settled += 1;
    }
    return settled;
  }

  return {
    async settle(input: { minAgeSeconds: number }): Promise<{ settled: number }> {
      let settled = 0;
      let after: string | null = null;
      for (;;) {
        const batch = await workspaceIdsAfter(dataSource, after, WORKSPACE_BATCH);
        if (batch.length === 0) return { settled };
        for (const workspaceId of batch) {
          settled += await settleWorkspace(workspaceId, input.minAgeSeconds);
          after = workspaceId;
        }
      }
    },
  };
}

export type PromptReconciler = ReturnType<typeof createPromptReconciler>;
