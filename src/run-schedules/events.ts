import { z } from 'zod';
import type { EventPayload } from '../platform/outbox/event';
import { defineEvent } from '../platform/outbox/event';
import { OVERLAP_POLICIES } from './entities';

/**
 * A schedule was created, changed or deleted: the definition its Temporal Schedule should have now
 * (absent once deleted), at `revision`. Written in the change's transaction; the API applies it
 * right after the commit, and the relay again (harmless: an older revision never overwrites a newer
 * one), so the row and Temporal cannot drift for good when Temporal was down at the time.
 */
export const runScheduleChanged = defineEvent(
  'run_schedule.changed',
  1,
  z.object({
    schedule_id: z.string(),
    revision: z.number().int(),
    definition: z
      .object({
        cron: z.string().nullable(),
        interval_seconds: z.number().int().nullable(),
        timezone: z.string(),
        overlap: z.enum(OVERLAP_POLICIES),
        paused: z.boolean(),
        note: z.string().nullable(),
        created_by: z.string(),
        summary: z.string(),
      })
      .nullable(),
  }),
);
export type RunScheduleChanged = EventPayload<typeof runScheduleChanged>;
