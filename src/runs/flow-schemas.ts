import { z } from 'zod';
import { filterSyntaxError } from '../filters/filter';
import { LIMITS } from '../rules/limits';

// Issue 43 item 2: a dispatch's `flow` (throttle, rate limit, debounce; the rules are `flow.ts`), in a
// module of its own so other flow knobs (priority) join it in one place. `control-schemas.ts` spreads
// it into every dispatch and run template.

const { flow: FLOW, priority: PRIORITY } = LIMITS.runs;

/** A flow knob's key: a literal, or a JMESPath expression over the run's input. */
const keyFields = {
  key: z
    .string()
    .trim()
    .min(1)
    .max(FLOW.keyChars)
    .optional()
    .describe('The key, literally: runs of the workspace with the same key share the knob.'),
  key_expression: z
    .string()
    .trim()
    .min(1)
    .max(LIMITS.webhook.filterChars)
    .optional()
    .describe(
      "A JMESPath expression over the run's input (a webhook trigger's run has the event in it, so " +
        '`event.body.repository.id` keys by repository) whose result is the key: a string as it is, anything ' +
        `else as its JSON (\`null\` when the path is missing); at most ${FLOW.keyChars} characters. It runs in ` +
        "the filters' worker pool under their time and memory budget; one that fails refuses the dispatch (422).",
    ),
};

/** Exactly one of `key` and `key_expression`, and an expression that compiles. */
function checkKey(value: { key?: string; key_expression?: string }, ctx: z.RefinementCtx): void {
  if ((value.key === undefined) === (value.key_expression === undefined)) {
    ctx.addIssue({ code: 'custom', message: 'Give exactly one of key and key_expression', path: ['key'] });
    return;
  }
  const why = value.key_expression === undefined ? null : filterSyntaxError(value.key_expression);
  if (why) ctx.addIssue({ code: 'custom', message: why, path: ['key_expression'] });
}

const limitField = z.number().int().min(1).max(FLOW.maxLimit);
const periodField = z.number().int().min(1).max(FLOW.maxPeriodSeconds);

export const RunThrottle = z
  .strictObject({
    ...keyFields,
    limit: limitField.describe('How many runs with the key may start per period.'),
    period_seconds: periodField.describe(`The period, in seconds (at most ${FLOW.maxPeriodSeconds}).`),
  })
  .superRefine(checkKey)
  .describe(
    'At most `limit` runs with the key start in any `period_seconds`; the others wait QUEUED (`queued_reason: ' +
      'throttled`) and start in dispatch order as the period allows. Nothing is dropped.',
  )
  .meta({ id: 'RunThrottle' });

export const RunRateLimit = z
  .strictObject({
    ...keyFields,
    limit: limitField.describe('How many runs with the key may be dispatched per period.'),
    period_seconds: periodField.describe(`The period, in seconds (at most ${FLOW.maxPeriodSeconds}).`),
  })
  .superRefine(checkKey)
  .describe(
    'At most `limit` runs with the key are dispatched in any `period_seconds`; a dispatch over it is refused: ' +
      '429 `run_rate_limited` with `Retry-After` over HTTP, a delivery with reason `rate_limited: …` for a webhook ' +
      "trigger, a skipped fire (the schedule's `last_refusal`) for a schedule.",
  )
  .meta({ id: 'RunRateLimit' });

export const RunDebounce = z
  .strictObject({
    ...keyFields,
    period_seconds: z
      .number()
      .int()
      .min(1)
      .max(FLOW.maxDebounceSeconds)
      .describe(`How long after the last dispatch with the key the run starts (at most ${FLOW.maxDebounceSeconds} s).`),
  })
  .superRefine(checkKey)
  .describe(
    'Dispatches with the key collapse into one run while it waits (QUEUED, `queued_reason: debounced`): it ' +
      'starts `period_seconds` after the last of them, with the last one’s input; each later dispatch answers ' +
      'its `execution_id` with `debounced: true`. Only the input is taken from a later dispatch.',
  )
  .meta({ id: 'RunDebounce' });

export const RunPriority = z
  .number()
  .int()
  .min(PRIORITY.highest)
  .max(PRIORITY.levels)
  .describe(
    `${PRIORITY.highest} (first) to ${PRIORITY.levels}; default ${PRIORITY.default}. Orders the workspace's own ` +
      `runs: while more than ${PRIORITY.inFlight} of them wait to start, the rest are held QUEUED ` +
      '(`queued_reason: priority`) and let go by a lower number first, then in dispatch order. Between ' +
      'workspaces the queue is fair whatever the priorities: each workspace gets its share whatever another ' +
      'has queued, at any priority.',
  );

export const RunFlow = z
  .strictObject({
    priority: RunPriority.optional(),
    throttle: RunThrottle.optional(),
    rate_limit: RunRateLimit.optional(),
    debounce: RunDebounce.optional(),
  })
  .refine((flow) => !(flow.throttle && flow.debounce), {
    message: 'A run is either throttled or debounced, not both',
    path: ['debounce'],
  })
  .describe(
    'Flow control (issue 43): `priority` orders starts, `throttle` delays them, `rate_limit` refuses ' +
      'dispatches, `debounce` collapses them. Beside `concurrency` a run may carry `rate_limit`, but not ' +
      '`throttle` or `debounce` (422): each of those holds the run’s start back as an enqueued concurrency key would.',
  )
  .meta({ id: 'RunFlow' });
export type RunFlow = z.output<typeof RunFlow>;
export type FlowKeyed = { key?: string; key_expression?: string };

/** The priority a run queues with: its `flow.priority`, else the default. */
export const priorityOf = (flow: RunFlow | undefined): number => flow?.priority ?? PRIORITY.default;

/** What a run shows of its flow: its priority and the keys (the evaluated ones). */
export const runFlowView = z
  .object({
    priority: z.number().int().describe('The priority the run queued with (1 first).'),
    throttle_key: z.string().nullable(),
    rate_limit_key: z.string().nullable(),
    debounce_key: z.string().nullable(),
    starts_at: z
      .string()
      .nullable()
      .describe('When a throttled or debounced run starts (later dispatches push a debounced one out).'),
  })
  .describe('How the run queues: its priority (the default filled in) and its flow keys, evaluated.');

/** The 422 when a dispatch holds a run's start back twice. */
export const flowConflict = (body: { flow?: RunFlow; concurrency?: unknown }): string | null =>
  body.concurrency && (body.flow?.throttle || body.flow?.debounce)
    ? 'A run with a concurrency key cannot be throttled or debounced too'
    : null;
