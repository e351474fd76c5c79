import { defineWorkflow } from '../platform/temporal/contract';

/** The Temporal Schedule of a run schedule; each fire's workflow id is this plus its scheduled time. */
export const runScheduleTemporalId = (scheduleId: string) => `run-schedule-${scheduleId}`;

export interface RunScheduleActionInput {
  workspaceId: string;
  scheduleId: string;
  /** The definition's revision this action was applied with (an older apply never overwrites a newer). */
  revision: number;
  /** Set by continue-as-new: the run this fire dispatched and still waits for. */
  executionId?: string;
}

export interface RunScheduleActionResult {
  /** `dispatched`: a run (or the fire's earlier one, on a retry); `refused`: nothing; `gone`: no such schedule. */
  outcome: 'dispatched' | 'refused' | 'gone';
  executionId?: string;
  /** How the run ended. */
  status?: string;
}

/**
 * One fire of a run schedule, started by its Temporal Schedule (`run-schedule-<id>-<scheduled
 * time>`): dispatches the schedule's run as its identity, then lives until that run finishes, so
 * the schedule's overlap policy applies to runs. Cancelled (cancel_other), it cancels its run.
 */
export const runScheduleActionWorkflow = defineWorkflow<[RunScheduleActionInput], RunScheduleActionResult>({
  type: 'runScheduleActionWorkflow',
  id: (input) => runScheduleTemporalId(input.scheduleId),
  workspaceId: (input) => input.workspaceId,
  summary: (input) => `fire of run schedule ${input.scheduleId}`,
});
