import { runScheduleTemporalId } from '../../src/run-schedules/workflow';
import { eventually } from './eventually';
import { getStack } from './stack';

/** Whether Temporal still has the run schedule's Schedule. */
export const temporalHasSchedule = (scheduleId: string) =>
  getStack()
    .runtime.temporal.client.schedule.getHandle(runScheduleTemporalId(scheduleId))
    .describe()
    .then(
      () => true,
      () => false,
    );

/**
 * Waits until a deleted run schedule's Temporal Schedule is gone: the delete commits first and reaches
 * Temporal after (right after the commit, else through the outbox), and the suite must leave none behind.
 */
export const scheduleGone = (scheduleId: string) =>
  eventually(async () => !(await temporalHasSchedule(scheduleId)), {
    what: `schedule ${scheduleId} gone from Temporal`,
    timeoutMs: 30_000,
  });
