import {
  CancellationScope,
  continueAsNew,
  isCancellation,
  proxyActivities,
  proxyLocalActivities,
  workflowInfo,
} from '@temporalio/workflow';
import type { Activities } from '../activities';
import { LIMITS } from '../src/rules/limits';
import type { RunScheduleActionInput, RunScheduleActionResult } from '../src/run-schedules/workflow';
import { runScheduleTemporalId } from '../src/run-schedules/workflow';
import { databaseActivity, databaseLocalActivity } from './activity-options';

const { fireRunSchedule, cancelScheduledRun } = proxyLocalActivities<Activities>(databaseLocalActivity);
// A long poll on the run's workflow result: a remote activity, allowed its wait plus a margin.
const { awaitScheduledRun } = proxyActivities<Activities>({
  ...databaseActivity,
  startToCloseTimeout: `${LIMITS.schedules.runWaitSeconds + 30} seconds`,
});

/**
 * One fire of a run schedule (`run-schedule-<id>-<scheduled time>`, started by its Temporal
 * Schedule). Dispatches the run as the schedule's identity (the fire names its idempotency key),
 * then lives until the run finishes, so the schedule's overlap policy (skip, buffer one, allow all,
 * cancel other) applies to runs. Cancelled by the schedule (cancel_other), it cancels its run
 * through the runs service first. A long wait continues as new with the run it waits for.
 */
export async function runScheduleActionWorkflow(input: RunScheduleActionInput): Promise<RunScheduleActionResult> {
  const { workspaceId, scheduleId } = input;
  let executionId = input.executionId;
  if (!executionId) {
    // The fire: its scheduled time (the suffix Temporal gave the workflow id) and its first run, since
    // two triggers within one second share the id (the second starting once the first closed).
    const info = workflowInfo();
    const fireId = `${info.workflowId.slice(runScheduleTemporalId(scheduleId).length + 1)}:${info.firstExecutionRunId}`;
    // Not cancellable half-way: a dispatch that happened is always known, so a cancel can reach its run.
    const fired = await CancellationScope.nonCancellable(() => fireRunSchedule({ workspaceId, scheduleId, fireId }));
    if (!fired.executionId) return fired;
    executionId = fired.executionId;
  }
  try {
    for (let waits = 0; ; waits++) {
      if (waits >= LIMITS.schedules.waitsPerAction || workflowInfo().continueAsNewSuggested) {
        await continueAsNew<typeof runScheduleActionWorkflow>({ ...input, executionId });
      }
      const run = await awaitScheduledRun({ workspaceId, executionId });
      if (run.finished) return { outcome: 'dispatched', executionId, status: run.status };
    }
  } catch (error) {
    if (isCancellation(error)) {
      const ref = { workspaceId, executionId };
      await CancellationScope.nonCancellable(() => cancelScheduledRun(ref));
    }
    throw error;
  }
}
