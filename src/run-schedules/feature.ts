import type { TemporalHandle } from '../platform/temporal/connection';
import { RunSchedule } from './entities';
import { runScheduleChanged } from './events';
import { applyScheduleChange } from './outbox-handler';
import { runScheduleRoutes } from './routes';
import type { RunScheduleService } from './service';

/** Scheduled runs (issue 26 part 3): a Temporal Schedule per row, whose fires dispatch runs. */
export const runSchedulesFeature = {
  name: 'run-schedules',
  tags: {
    'run-schedules': 'Runs dispatched on a cron or an interval, by Temporal Schedules.',
  },
  entities: [RunSchedule],
  routes: (runtime: { services: { runSchedules: RunScheduleService } }) =>
    runScheduleRoutes(runtime.services.runSchedules),
  events: [runScheduleChanged],
  // A committed change: make the Temporal Schedule match.
  outboxHandlers: (temporal: TemporalHandle) => [applyScheduleChange(temporal)],
};
