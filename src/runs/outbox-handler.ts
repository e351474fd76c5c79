import type { OutboxHandler } from '../platform/outbox/relay';
import type { TemporalHandle } from '../platform/temporal/connection';
import { runWorkflow } from './workflow';

/**
 * `run.dispatched` → the run's workflow `run-<execution_id>`. The id is derived from the event and
 * a second start is refused (the contract's REJECT_DUPLICATE), so redelivery starts nothing new.
 */
export const startRun =
  (temporal: TemporalHandle): OutboxHandler =>
  async (event) => {
    const executionId =
      typeof event.payload.execution_id === 'string' ? event.payload.execution_id : event.aggregate_id;
    const agent = event.payload.agent === 'llm' ? 'llm' : 'playbook';
    const stepCount = typeof event.payload.step_count === 'number' ? event.payload.step_count : 0;
    const recheck = event.payload.approval_recheck_seconds;
    const rechecksPerRun = event.payload.approval_rechecks_per_run;
    const goal = event.payload.goal;
    await temporal.workflows.start(runWorkflow, {
      workspaceId: event.workspace_id,
      executionId,
      agent,
      stepCount,
      ...(typeof recheck === 'number' ? { approvalRecheckSeconds: recheck } : {}),
      ...(typeof rechecksPerRun === 'number' ? { approvalRechecksPerRun: rechecksPerRun } : {}),
      ...(typeof goal === 'string' ? { goal } : {}),
    });
  };
