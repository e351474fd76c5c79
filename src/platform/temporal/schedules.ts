import type { Client, ScheduleOptions } from '@temporalio/client';
import { ScheduleAlreadyRunning, ScheduleNotFoundError, ScheduleOverlapPolicy } from '@temporalio/client';
import type { WorkflowContract } from './contract';

/** A recurring job: features declare theirs in their `feature.ts`; `src/app/schedules.ts` lists them all. */
export interface MaintenanceSchedule {
  /** Suffix of the schedule id; the full id is `<task queue>.<name>`, so test runs never collide. */
  name: string;
  description: string;
  workflow: WorkflowContract<any, unknown>;
  args: unknown[];
  spec: ScheduleOptions['spec'];
}

export const scheduleId = (taskQueue: string, schedule: Pick<MaintenanceSchedule, 'name'>) =>
  `${taskQueue}.${schedule.name}`;

/**
 * Creates each schedule, or updates it to the current definition when it exists. Overlap is
 * skipped and missed runs are not caught up beyond a minute: a maintenance pass that runs late
 * does the work of the ones it replaced.
 */
export async function ensureSchedules(
  client: Client,
  taskQueue: string,
  schedules: readonly MaintenanceSchedule[],
  options: { paused?: boolean } = {},
): Promise<string[]> {
  const ids: string[] = [];
  for (const schedule of schedules) {
    const id = scheduleId(taskQueue, schedule);
    const definition: ScheduleOptions = {
      scheduleId: id,
      spec: schedule.spec,
      action: {
        type: 'startWorkflow',
        workflowType: schedule.workflow.type,
        args: schedule.args,
        taskQueue,
        workflowId: id,
      },
      policies: { overlap: ScheduleOverlapPolicy.SKIP, catchupWindow: '1 minute' },
      state: { note: schedule.description, paused: options.paused ?? false },
    };
    try {
      await client.schedule.create(definition);
    } catch (error) {
      if (!(error instanceof ScheduleAlreadyRunning)) throw error;
      await client.schedule.getHandle(id).update((previous) => ({
        ...previous,
        spec: definition.spec,
        action: definition.action,
        policies: definition.policies,
      }));
    }
    ids.push(id);
  }
  return ids;
}

/**
 * Removes a task queue's schedules (test stacks clean up after themselves). Idempotent: a schedule
 * already gone is what was asked for.
 */
export async function deleteSchedules(
  client: Client,
  taskQueue: string,
  schedules: readonly MaintenanceSchedule[],
): Promise<void> {
  for (const schedule of schedules) {
    try {
      await client.schedule.getHandle(scheduleId(taskQueue, schedule)).delete();
    } catch (error) {
      if (!(error instanceof ScheduleNotFoundError)) throw error;
    }
  }
}
