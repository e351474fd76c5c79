import { z } from 'zod';
import { LIMITS } from '../rules/limits';
import { RunFlow, runFlowView } from './flow-schemas';

// Issue 26 parts 4 and 5: the dispatch fields that control a run (its concurrency key, its tags),
// what a run shows of them, and the rerun request. `schemas.ts` spreads these into its own.

const { concurrency: CONCURRENCY, tags: TAGS } = LIMITS.runs;

export const Tag = z
  .string()
  .min(1)
  .max(TAGS.chars)
  .regex(
    /^[A-Za-z0-9][A-Za-z0-9_.:/=-]*$/,
    'A tag is letters, digits and _ . : / = - (starting with a letter or digit)',
  );

export const RunTags = z
  .array(Tag)
  .max(TAGS.max)
  .describe(
    `At most ${TAGS.max} tags of at most ${TAGS.chars} characters; \`GET /v1/runs?tag=\` filters by them, and ` +
      'Temporal shows them as the search attribute `WeftTags`. Repeats are dropped.',
  );

export const CONCURRENCY_POLICIES = ['reject', 'enqueue', 'cancel_previous'] as const;
export type ConcurrencyPolicy = (typeof CONCURRENCY_POLICIES)[number];

export const RunConcurrency = z
  .strictObject({
    key: z
      .string()
      .trim()
      .min(1)
      .max(CONCURRENCY.keyChars)
      .describe('Runs of the workspace with this key share the limit.'),
    limit: z
      .number()
      .int()
      .min(1)
      .max(CONCURRENCY.maxLimit)
      .default(1)
      .describe('How many runs with the key may be active (QUEUED to start, RUNNING or AWAITING_APPROVAL) at once.'),
    policy: z
      .enum(CONCURRENCY_POLICIES)
      .default('reject')
      .describe(
        'At the limit: `reject` answers 409 `concurrency_limit` with the active execution ids; `enqueue` keeps the ' +
          'run QUEUED (`queued_reason: concurrency_limit`) until a slot frees, in dispatch order; `cancel_previous` ' +
          'cancels the oldest active run with the key, as `POST /v1/runs/{id}/cancel` would, and starts this one.',
      ),
  })
  .meta({ id: 'RunConcurrency' });
export type RunConcurrency = z.output<typeof RunConcurrency>;

/** The control fields a dispatch (and a webhook trigger's or schedule's run template) may carry. */
export const runControlFields = {
  tags: RunTags.optional(),
  concurrency: RunConcurrency.optional(),
  flow: RunFlow.optional(),
};

/** What a run shows of them. */
export const runControlView = {
  tags: z.array(z.string()),
  // Inline, not the RunConcurrency component: a nullable $ref loses its null in the OpenAPI document.
  concurrency: z
    .object({ key: z.string(), limit: z.number().int(), policy: z.enum(CONCURRENCY_POLICIES) })
    .nullable()
    .describe('The concurrency key the run was dispatched with.'),
  queued_reason: z
    .enum(['concurrency_limit', 'throttled', 'debounced', 'priority'])
    .nullable()
    .describe(
      'Why a QUEUED run has not started: `concurrency_limit` while it waits for a slot of its key, `throttled` ' +
        "while its throttle's period is full, `debounced` while later dispatches with its debounce key may come, " +
        '`priority` while its workspace has as many runs about to start as it may, and it waits its turn by ' +
        '`flow.priority`.',
    ),
  flow: runFlowView,
  rerun_of: z.uuid().nullable().describe('The run this one re-runs (`POST /v1/runs/{id}/rerun`).'),
};

export const RerunRequest = z
  .strictObject({
    from_step: z
      .number()
      .int()
      .min(0)
      .optional()
      .describe(
        'The first step to execute again. The steps before it must have SUCCEEDED (for an llm run, or been ' +
          'answered to the model with a refusal); their recorded results are reused (`reused_from_step_id` set, ' +
          'no charge, no tool call). A playbook runs its later steps again; an llm run asks the model again from ' +
          'there, with the reused steps as its history (up to one past its last tool step). Default: the first ' +
          'step that did not succeed, or 0 when every step did.',
      ),
    input_overrides: z
      .record(z.string().regex(/^\d+$/, 'A step number'), z.record(z.string(), z.unknown()))
      .optional()
      .describe(
        'New inputs by step number (`{"2": {"query": "…"}}`), each for a step at or after `from_step` and checked ' +
          "against its tool's schema (422). Other steps keep the input they ran with. Playbook runs only: an " +
          "llm run's later steps are chosen by the model again (422).",
      ),
  })
  .meta({ id: 'RerunRequest' });
export type RerunRequest = z.output<typeof RerunRequest>;
