import { settledWithin } from '../platform/deadline';
import type { Logger } from '../platform/logger';
import type { OutboxRelay } from '../platform/outbox/relay';
import type { TemporalHandle } from '../platform/temporal/connection';
import { LIMITS } from '../rules/limits';
import type { RunScheduleChanged } from './events';
import type { ScheduleRowExists } from './temporal';
import { applyWhileRowExists } from './temporal';

/**
 * After a change commits (with its `run_schedule.changed` event): applies it to Temporal at once,
 * waiting at most `temporalWaitMs`, then hands the event to the relay, which applies it again (a
 * no-op once applied) or, while Temporal is unreachable, until it is. True when applied here.
 */
export function createScheduleSync(deps: {
  temporal: Pick<TemporalHandle, 'client' | 'taskQueue'>;
  outbox: Pick<OutboxRelay, 'kick'>;
  logger: Logger;
  rowExists: ScheduleRowExists;
}) {
  const { temporal, outbox, logger, rowExists } = deps;
  return async function sync(workspaceId: string, change: RunScheduleChanged): Promise<boolean> {
    const applied = applyWhileRowExists(temporal, rowExists, workspaceId, change).then(
      () => true,
      (error: unknown) => {
        logger.warn({ err: error, schedule_id: change.schedule_id }, 'run schedule not applied; the outbox will');
        return false;
      },
    );
    // Not applied in time, or refused: false either way (the outbox applies it).
    const done = (await settledWithin(applied, LIMITS.schedules.temporalWaitMs)) && (await applied);
    outbox.kick(workspaceId);
    return done;
  };
}

export type ScheduleSync = ReturnType<typeof createScheduleSync>;
