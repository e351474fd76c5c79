import type { Logger } from '../platform/logger';
import type { OutboxRelay } from '../platform/outbox/relay';
import type { TemporalHandle } from '../platform/temporal/connection';
import { LIMITS } from '../rules/limits';
import type { RunScheduleChanged } from './events';
import { applyRunSchedule, deleteTemporalSchedule } from './temporal';

/**
 * After a change commits (with its `run_schedule.changed` event): applies it to Temporal at once,
 * waiting at most `temporalWaitMs`, then hands the event to the relay, which applies it again (a
 * no-op once applied) or, while Temporal is unreachable, until it is. True when applied here.
 */
export function createScheduleSync(deps: {
  temporal: Pick<TemporalHandle, 'client' | 'taskQueue'>;
  outbox: Pick<OutboxRelay, 'kick'>;
  logger: Logger;
  /** Whether the schedule's row still exists; without it a late apply is left to the orphan's next fire. */
  rowExists?: (workspaceId: string, scheduleId: string) => Promise<boolean>;
}) {
  const { temporal, outbox, logger, rowExists } = deps;
  /**
   * The change applied, still in flight past `temporalWaitMs` under load, may land after the schedule's
   * deletion was applied, and re-create it (the relay applies a schedule's events in order; this call does
   * not wait its turn): a schedule whose row is gone by then is deleted again.
   */
  const apply = async (workspaceId: string, change: RunScheduleChanged) => {
    await applyRunSchedule(temporal, workspaceId, change);
    if (change.definition && rowExists && !(await rowExists(workspaceId, change.schedule_id))) {
      await deleteTemporalSchedule(temporal, change.schedule_id);
    }
  };
  return async function sync(workspaceId: string, change: RunScheduleChanged): Promise<boolean> {
    const applied = apply(workspaceId, change).then(
      () => true,
      (error: unknown) => {
        logger.warn({ err: error, schedule_id: change.schedule_id }, 'run schedule not applied; the outbox will');
        return false;
      },
    );
    let timer: NodeJS.Timeout | undefined;
    const waited = new Promise<false>((resolve) => {
      timer = setTimeout(() => resolve(false), LIMITS.schedules.temporalWaitMs);
    });
    const done = await Promise.race([applied, waited]);
    clearTimeout(timer);
    outbox.kick(workspaceId);
    return done;
  };
}

export type ScheduleSync = ReturnType<typeof createScheduleSync>;
