import { upsertSearchAttributes } from '@temporalio/workflow';
import { RUN_STATUS_ATTRIBUTE, WAITING_FOR_ATTRIBUTE } from '../src/platform/temporal/search-attributes';
import type { RunPlanStep, RunWorkflowResult } from '../src/runs/workflow';

const FINISHED = ['SUCCEEDED', 'FAILED', 'CANCELLED'];
/** A run in one of these states has ended: no step of it runs again. */
export const finished = (status: string) => FINISHED.includes(status);

/**
 * WeftWaitingFor names the approval a run waits on and its step's tool (`approval <id>: <tool>`, so an
 * operator finds the run from the approval the API lists), and is cleared when it goes on: in the same
 * upsert as the status, so the command sequence (and replay of older histories) is unchanged. A state
 * recorded before it carried the id names the step number instead.
 */
export const showWaiting = (status: string, step?: RunPlanStep, approvalId?: string) =>
  upsertSearchAttributes([
    { key: RUN_STATUS_ATTRIBUTE, value: status },
    {
      key: WAITING_FOR_ATTRIBUTE,
      value:
        step && status === 'AWAITING_APPROVAL' ? `approval ${approvalId ?? `step ${step.stepNo}`}: ${step.tool}` : null,
    },
  ]);

/** WeftRunStatus follows Postgres: set after each transition an activity has committed. */
export const showStatus = (status: string) => showWaiting(status);

/** The run's result, its status shown first. */
export const ended = (status: string): RunWorkflowResult => {
  showStatus(status);
  return { status: status as RunWorkflowResult['status'] };
};
