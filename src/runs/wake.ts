import { WorkflowNotFoundError } from '@temporalio/client';
import { settledWithin } from '../platform/deadline';
import type { Logger } from '../platform/logger';
import type { OutboxRelay } from '../platform/outbox/relay';
import type { TemporalHandle } from '../platform/temporal/connection';
import { LIMITS } from '../rules/limits';
import type { WokenWaiter } from './waitpoint-events';
import { waitpointSettled } from './waitpoint-events';
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
    if (!(await settledWithin(signalled, LIMITS.runs.wakeWaitMs))) {
      deps.logger.warn({ execution_id: executionId }, 'run signal still pending; answering, the re-check has it');
    }
  };
}

/**
 * After a run's finish committed: wakes the runs whose `runs.wait` on it the finish completed, each
 * signalled directly rather than through the relay's read, delivery and write (the parent goes on at
 * once), its `waitpoint.settled` event then marked delivered; then kicks the outbox for the rest (the
 * finish's callbacks, and any wake that failed here, which the relay retries). Marked before the kick, so
 * the relay does not signal a second time: a signal landing while the parent's workflow task completes
 * the run would fail that task and replay it. Waits at most `LIMITS.runs.wakeWaitMs` before kicking.
 */
export function createWaiterWaker(deps: {
  temporal: Pick<TemporalHandle, 'workflows'>;
  outbox: Pick<OutboxRelay, 'kick' | 'delivered'>;
  logger: Logger;
}) {
  const wakeOne = async (workspaceId: string, waiter: WokenWaiter) => {
    try {
      await deps.temporal.workflows
        .handle(runWorkflow, runWorkflowId(waiter.executionId))
        .signal(runChangedSignal, { reason: 'waitpoint_completed' });
    } catch (error) {
      // A closed workflow needs no signal (its re-check or the reconciler has it), as the relay's handler.
      if (!(error instanceof WorkflowNotFoundError)) throw error;
    }
    await deps.outbox.delivered(workspaceId, waitpointSettled, waiter.waitpointId);
  };
  return async function wakeWaiters(workspaceId: string, woken: readonly WokenWaiter[]): Promise<void> {
    if (woken.length > 0) {
      const signalled = Promise.all(
        woken.map((waiter) =>
          wakeOne(workspaceId, waiter).catch((error: unknown) => {
            deps.logger.warn(
              { err: error, execution_id: waiter.executionId },
              'waiting run not woken; the outbox relay will signal it',
            );
          }),
        ),
      );
      await settledWithin(signalled, LIMITS.runs.wakeWaitMs);
    }
    deps.outbox.kick(workspaceId);
  };
}

export type WaiterWaker = ReturnType<typeof createWaiterWaker>;
