import { iso } from '../platform/dates';
import type { RunSchedule } from './entities';
import type { RunScheduleChanged } from './events';
import type { RunScheduleRow } from './schemas';

// The entity → response mappers of run schedules, and the definition a row asks of Temporal.

/** What the Temporal UI shows as the schedule's summary (its payloads are sealed). */
const summaryOf = (schedule: RunSchedule) =>
  `${schedule.runTemplate.agent} run ` +
  (schedule.cron !== null ? `on '${schedule.cron}' (${schedule.timezone})` : `every ${schedule.intervalSeconds}s`);

/** The definition the row asks its Temporal Schedule to have, at the row's revision. */
export const changeOf = (schedule: RunSchedule): RunScheduleChanged => ({
  schedule_id: schedule.id,
  revision: schedule.revision,
  definition: {
    cron: schedule.cron,
    interval_seconds: schedule.intervalSeconds,
    timezone: schedule.timezone,
    overlap: schedule.overlap,
    paused: schedule.paused,
    note: schedule.note,
    created_by: schedule.principal.userId,
    summary: summaryOf(schedule),
  },
});

/** A deleted schedule: its Temporal Schedule goes too. */
export const deletionOf = (schedule: RunSchedule): RunScheduleChanged => ({
  schedule_id: schedule.id,
  revision: schedule.revision + 1,
  definition: null,
});

export const scheduleRow = (schedule: RunSchedule, temporal: RunScheduleRow['temporal']): RunScheduleRow => ({
  id: schedule.id,
  cron: schedule.cron,
  interval_seconds: schedule.intervalSeconds,
  timezone: schedule.timezone,
  run: schedule.runTemplate,
  overlap: schedule.overlap,
  paused: schedule.paused,
  note: schedule.note,
  created_by: schedule.createdBy,
  last_refusal:
    schedule.lastRefusal && schedule.lastRefusedAt
      ? { reason: schedule.lastRefusal, at: iso(schedule.lastRefusedAt) }
      : null,
  temporal,
  created_at: schedule.createdAt.toISOString(),
  updated_at: schedule.updatedAt.toISOString(),
});
