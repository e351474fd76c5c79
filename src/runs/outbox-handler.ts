import type { OutboxHandler } from '../platform/outbox/relay';
import type { TemporalHandle } from '../platform/temporal/connection';
import type { RunWorkflowInput } from './workflow';
import { runWorkflow } from './workflow';

/** The workflow input a `run.dispatched` event's payload describes. */
export function runStartInput(
  workspaceId: string,
  aggregateId: string,
  payload: Record<string, unknown>,
): RunWorkflowInput {
  const executionId = typeof payload.execution_id === 'string' ? payload.execution_id : aggregateId;
  const recheck = payload.approval_recheck_seconds;
  const rechecksPerRun = payload.approval_rechecks_per_run;
  const goal = payload.goal;
  return {
    workspaceId,
    executionId,
    agent: payload.agent === 'llm' ? 'llm' : 'playbook',
    stepCount: typeof payload.step_count === 'number' ? payload.step_count : 0,
    ...(typeof recheck === 'number' ? { approvalRecheckSeconds: recheck } : {}),
    ...(typeof rechecksPerRun === 'number' ? { approvalRechecksPerRun: rechecksPerRun } : {}),
    ...(typeof goal === 'string' ? { goal } : {}),
  };
}

/**
 * `run.dispatched` → the run's workflow `run-<execution_id>`. The id is derived from the event and
 * a second start is refused (the contract's REJECT_DUPLICATE), so redelivery starts nothing new,
 * nor does this delivery when the API already started the run right after its commit.
 */
export const startRun =
  (temporal: TemporalHandle): OutboxHandler =>
  async (event) => {
    await temporal.workflows.start(runWorkflow, runStartInput(event.workspace_id, event.aggregate_id, event.payload));
  };
