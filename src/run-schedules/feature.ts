import type { RateLimiter } from '../platform/api/rate-limit';
import type { Config } from '../platform/config';
import type { UnitOfWork } from '../platform/db/unit-of-work';
import type { Logger } from '../platform/logger';
import type { OutboxRelay } from '../platform/outbox/relay';
import type { TemporalHandle } from '../platform/temporal/connection';
import type { RunService } from '../runs/service';
import { RunSchedule } from './entities';
import { runScheduleChanged } from './events';
import { createRunScheduleFires } from './fires';
import { applyScheduleChange } from './outbox-handler';
import { scheduleRowExists } from './repository';
import { runScheduleRoutes } from './routes';
import type { RunScheduleService } from './service';
import { createRunScheduleService } from './service';
import type { ScheduleSync } from './sync';
import { createScheduleSync } from './sync';

/** Scheduled runs (issue 26 part 3): a Temporal Schedule per row, whose fires dispatch runs. */
export const runSchedulesFeature = {
  name: 'run-schedules',
  services: {
    /** Applies a schedule's change to Temporal right after its commit; the outbox again if that fails. */
    runScheduleSync: (ctx: { uow: UnitOfWork; temporal: TemporalHandle; outbox: OutboxRelay; logger: Logger }) =>
      createScheduleSync({
        temporal: ctx.temporal,
        outbox: ctx.outbox,
        logger: ctx.logger,
        rowExists: scheduleRowExists(ctx.uow),
      }),
    /** Run schedules (issue 26 part 3): management, and their Temporal Schedules. */
    runSchedules: (ctx: {
      uow: UnitOfWork;
      temporal: TemporalHandle;
      config: Pick<Config, 'SCHEDULE_MIN_INTERVAL_SECONDS'>;
      services: { runs: RunService; runScheduleSync: ScheduleSync };
    }) =>
      createRunScheduleService({
        uow: ctx.uow,
        temporal: ctx.temporal,
        runs: ctx.services.runs,
        sync: ctx.services.runScheduleSync,
        minIntervalSeconds: ctx.config.SCHEDULE_MIN_INTERVAL_SECONDS,
      }),
    /** A run schedule's fires, which its action workflow's activities call. */
    runScheduleFires: (ctx: {
      uow: UnitOfWork;
      temporal: TemporalHandle;
      logger: Logger;
      config: Pick<Config, 'SCHEDULE_FIRES_PER_HOUR'>;
      rateLimiter?: RateLimiter;
      services: { runs: RunService; runScheduleSync: ScheduleSync };
    }) =>
      createRunScheduleFires({
        uow: ctx.uow,
        temporal: ctx.temporal,
        runs: ctx.services.runs,
        sync: ctx.services.runScheduleSync,
        logger: ctx.logger,
        rateLimiter: ctx.rateLimiter,
        firesPerHour: ctx.config.SCHEDULE_FIRES_PER_HOUR,
      }),
  },
  tags: {
    'run-schedules': 'Runs dispatched on a cron or an interval, by Temporal Schedules.',
  },
  entities: [RunSchedule],
  routes: (runtime: { services: { runSchedules: RunScheduleService } }) =>
    runScheduleRoutes(runtime.services.runSchedules),
  events: [runScheduleChanged],
  // A committed change: make the Temporal Schedule match (and not outlive its row).
  outboxHandlers: (temporal: TemporalHandle, uow: UnitOfWork) => [
    applyScheduleChange(temporal, scheduleRowExists(uow)),
  ],
};
