import type { Logger } from '../platform/logger';
import type { TemporalHandle } from '../platform/temporal/connection';
import { LIMITS } from '../rules/limits';
import { runChangedSignal, runWorkflow, runWorkflowId } from './workflow';

export type WakeReason = 'approval_resolved' | 'cancelled';

/**
 * Wakes a run's workflow after a change committed (a cancel, an approval decided). The signal carries
 * no data: the workflow re-reads Postgres, and a lost signal is covered by its re-check timer, so a
 * failure is only logged. The caller waits at most `LIMITS.runs.wakeWaitMs` (issue 44 item 6): while
 * Temporal is unreachable the client retries the signal for about 20 s, and the change is committed
 * already. The signal goes on in the background and still wakes the run if Temporal answers in time.
 */
export function createRunWaker(deps: { temporal: Pick<TemporalHandle, 'workflows'>; logger: Logger }) {
  return async function wake(executionId: string, reason: WakeReason): Promise<void> {
    const signalled = deps.temporal.workflows
      .handle(runWorkflow, runWorkflowId(executionId))
      .signal(runChangedSignal, { reason })
      .then(
        () => true,
        (error: unknown) => {
          deps.logger.warn(
            { err: error, execution_id: executionId },
            'run signal failed; the re-check timer will notice',
          );
          return true;
        },
      );
    let timer: NodeJS.Timeout | undefined;
    const waited = new Promise<false>((resolve) => {
      timer = setTimeout(() => resolve(false), LIMITS.runs.wakeWaitMs);
    });
    const settled = await Promise.race([signalled, waited]);
    clearTimeout(timer);
    if (!settled) {
      deps.logger.warn({ execution_id: executionId }, 'run signal still pending; answering, the re-check has it');
    }
  };
}
