import type { Logger } from '../platform/logger';
import type { TemporalHandle } from '../platform/temporal/connection';
import { runChangedSignal, runWorkflow, runWorkflowId } from './workflow';

export type WakeReason = 'approval_resolved' | 'cancelled';

/**
 * Wakes a run's workflow after a change committed (a cancel, an approval decided). The signal carries
 * no data: the workflow re-reads Postgres, and a lost signal is covered by its re-check timer, so a
 * failure is only logged.
 */
export function createRunWaker(deps: { temporal: Pick<TemporalHandle, 'workflows'>; logger: Logger }) {
  return async function wake(executionId: string, reason: WakeReason): Promise<void> {
    try {
      await deps.temporal.workflows
        .handle(runWorkflow, runWorkflowId(executionId))
        .signal(runChangedSignal, { reason });
    } catch (error) {
      deps.logger.warn({ err: error, execution_id: executionId }, 'run signal failed; the re-check timer will notice');
    }
  };
}
