import { z } from 'zod';
import { LIMITS } from '../rules/limits';
import { RunTemplate } from '../runs/schemas';
import { cronProblem, knownTimezone } from './cron';
import { OVERLAP_POLICIES } from './entities';

const timestamp = z.iso.datetime({ offset: true });
const { schedules } = LIMITS;

const UNIT_SECONDS: Record<string, number> = { s: 1, m: 60, h: 3600, d: 86_400 };

/** `90`, `"90s"`, `"15m"`, `"2h"`, `"1d"` → seconds. */
const Interval = z
  .union([
    z.number().int(),
    z.string().regex(/^\d{1,9}[smhd]$/, 'An interval is seconds, or a number and s, m, h or d'),
  ])
  .transform((value) => (typeof value === 'number' ? value : Number(value.slice(0, -1)) * UNIT_SECONDS[value.at(-1)!]!))
  .pipe(
    z
      .number()
      .min(schedules.floorIntervalSeconds, `At least ${schedules.floorIntervalSeconds} second`)
      .max(schedules.maxIntervalSeconds, 'At most 366 days'),
  )
  .describe(
    'How often: seconds, or `"30s"`, `"15m"`, `"2h"`, `"1d"`. Fires are aligned to the epoch. At least the ' +
      `deployment's minimum (SCHEDULE_MIN_INTERVAL_SECONDS, default ${schedules.minIntervalSeconds} s); ` +
      'shorter is 422.',
  );

const Cron = z
  .string()
  .trim()
  .min(1)
  .max(schedules.cronChars)
  .superRefine((value, ctx) => {
    const problem = cronProblem(value);
    if (problem) ctx.addIssue({ code: 'custom', message: problem });
  })
  .describe(
    'Five fields (`minute hour day-of-month month day-of-week`, `0 9 * * mon-fri`) or `@daily` etc. Its fires ' +
      'may be no closer than the deployment’s minimum interval (422 otherwise).',
  );

const Timezone = z
  .string()
  .max(64)
  .refine(knownTimezone, 'Unknown IANA time zone')
  .describe('The IANA time zone the cron is read in (`Europe/Paris`); default UTC.');

const Overlap = z
  .enum(OVERLAP_POLICIES)
  .describe(
    'While the previous fire’s RUN has not finished: `skip` the new fire, `buffer_one` (start it when the ' +
      'run finishes; at most one waits), `allow` both, or `cancel_other` (cancel the previous run, then start).',
  );

const Note = z.string().max(schedules.noteChars).describe('Shown in the Temporal UI beside the schedule.');

const runField = RunTemplate.describe(
  'The run each fire dispatches: a `POST /v1/runs` body without `idempotency_key` (each fire’s key is ' +
    '`schedule:<id>:<scheduled time>`), checked as a dispatch is, with this credential’s scopes.',
);

export const CreateRunScheduleRequest = z
  .object({
    cron: Cron.optional(),
    interval: Interval.optional(),
    timezone: Timezone.default('UTC'),
    run: runField,
    overlap: Overlap.default('skip'),
    paused: z.boolean().default(false),
    note: Note.optional(),
  })
  .strict()
  .superRefine((body, ctx) => {
    if ((body.cron === undefined) === (body.interval === undefined)) {
      ctx.addIssue({ code: 'custom', path: ['cron'], message: 'Give exactly one of cron and interval' });
    }
  })
  .meta({ id: 'CreateRunScheduleRequest' });
export type CreateRunScheduleRequest = z.output<typeof CreateRunScheduleRequest>;

export const UpdateRunScheduleRequest = z
  .object({
    cron: Cron.optional(),
    interval: Interval.optional(),
    timezone: Timezone.optional(),
    run: runField.optional(),
    overlap: Overlap.optional(),
    paused: z.boolean().optional(),
    note: Note.nullable().optional(),
  })
  .strict()
  .superRefine((body, ctx) => {
    if (body.cron !== undefined && body.interval !== undefined) {
      ctx.addIssue({ code: 'custom', path: ['cron'], message: 'Give at most one of cron and interval' });
    }
  })
  .meta({ id: 'UpdateRunScheduleRequest' });
export type UpdateRunScheduleRequest = z.output<typeof UpdateRunScheduleRequest>;

export const RunScheduleTemporal = z
  .object({
    schedule_id: z.string().describe('The Temporal Schedule’s id: `run-schedule-<id>`.'),
    paused: z.boolean(),
    note: z.string().nullable(),
    next_fire_times: z.array(timestamp).describe(`The next ${schedules.nextFireTimes} fire times Temporal computed.`),
    recent_fires: z.array(z.object({ scheduled_at: timestamp, workflow_id: z.string() })),
    running: z.array(z.string()).describe('Workflow ids of the fires whose run has not finished yet.'),
    fires: z.number().int().describe('Fires so far (trigger-now included).'),
    skipped_for_overlap: z.number().int().describe('Fires skipped because the previous run had not finished.'),
  })
  .meta({ id: 'RunScheduleTemporal' });

export const RunScheduleRow = z
  .object({
    id: z.uuid(),
    cron: z.string().nullable(),
    interval_seconds: z.number().int().nullable(),
    timezone: z.string(),
    run: RunTemplate,
    overlap: Overlap,
    paused: z.boolean(),
    note: z.string().nullable(),
    created_by: z.uuid(),
    last_refusal: z
      .object({ reason: z.string(), at: timestamp })
      .nullable()
      .describe('The last fire that dispatched nothing, and why (say, the creating credential was revoked).'),
    temporal: RunScheduleTemporal.nullable().describe(
      'What Temporal says of the schedule now; null while Temporal cannot be reached or has not applied it yet.',
    ),
    created_at: timestamp,
    updated_at: timestamp,
  })
  .meta({ id: 'RunSchedule' });
export type RunScheduleRow = z.input<typeof RunScheduleRow>;

export const RunScheduleList = z.object({ schedules: z.array(RunScheduleRow) }).meta({ id: 'RunScheduleList' });

export const RunScheduleIdParams = z.object({ id: z.uuid() });

export const TriggerRunScheduleResponse = z
  .object({ id: z.uuid(), triggered_at: timestamp })
  .meta({ id: 'RunScheduleTriggered' });
