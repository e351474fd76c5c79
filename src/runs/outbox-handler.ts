import { WorkflowNotFoundError } from '@temporalio/client';
import type { OutboxHandler } from '../platform/outbox/relay';
import { onEvent } from '../platform/outbox/relay';
import type { TemporalHandle } from '../platform/temporal/connection';
import { runDispatched, runFlowHeld, runStartInput } from './events';
import { runFlowWorkflow } from './flow-workflow';
import { waitpointSettled } from './waitpoint-events';
import { runChangedSignal, runWorkflow, runWorkflowId } from './workflow';

/**
 * `run.dispatched` → the run's workflow `run-<execution_id>`. The id is derived from the event and
 * a second start is refused (the contract's REJECT_DUPLICATE), so redelivery starts nothing new,
 * nor does this delivery when the API already started the run right after its commit.
 */
export const startRun = (temporal: TemporalHandle): OutboxHandler<typeof runDispatched> =>
  onEvent(runDispatched, async (event) => {
    await temporal.workflows.start(runWorkflow, runStartInput(event.workspace_id, event.payload));
  });

/**
 * `waitpoint.settled` → the `runChanged` signal to the run that waits on it (issue 40 item 3), so it
 * goes on at once; a run whose workflow has closed needs none (its re-check or the reconciler has it).
 */
export const wakeWaitingRun = (temporal: TemporalHandle): OutboxHandler<typeof waitpointSettled> =>
  onEvent(waitpointSettled, async (event) => {
    try {
      await temporal.workflows
        .handle(runWorkflow, runWorkflowId(event.payload.execution_id))
        .signal(runChangedSignal, { reason: 'waitpoint_completed' });
    } catch (error) {
      if (!(error instanceof WorkflowNotFoundError)) throw error;
    }
  });

/** `run.flow_held` → the held run's timer workflow `run-flow-<execution_id>` (a running one answers a second start). */
export const startFlowTimer = (temporal: TemporalHandle): OutboxHandler<typeof runFlowHeld> =>
  onEvent(runFlowHeld, async (event) => {
    await temporal.workflows.start(runFlowWorkflow, {
      workspaceId: event.workspace_id,
      executionId: event.payload.execution_id,
    });
  });
