import { z } from 'zod';
import { PolicyDecisionBody } from '../approvals/rules';
import { ApprovalRow, BudgetLimits, BudgetSpent } from '../approvals/schemas';
import { IdempotencyKey } from '../capabilities/idempotency';
import { LIMITS } from '../rules/limits';
import { DispatchCallback, DispatchCallbackCreated } from '../run-callbacks/schemas';
import { runControlFields, runControlView, Tag } from './control-schemas';
import { RUN_STATUSES } from './entities';

const timestamp = z.iso.datetime({ offset: true });

export const RunStatus = z.enum(RUN_STATUSES);

export const PlaybookStep = z
  .object({
    tool: z.string().min(1).max(100).describe('A capability name, as listed by `GET /v1/cap`.'),
    input: z
      .record(z.string(), z.unknown())
      .default({})
      .describe(
        'The tool\'s input; checked against its schema (a `{"$from": …}` value once resolved, when the step starts).',
      ),
    requires_approval: z.boolean().default(false).describe('Wait for a human approval before this step runs.'),
  })
  .strict()
  .meta({ id: 'PlaybookStep' });
export type PlaybookStep = z.output<typeof PlaybookStep>;

/**
 * A caller's run key: `webhook:` is the triggers' own and `schedule:` the run schedules' (their run
 * keys could otherwise be taken first).
 */
const RunIdempotencyKey = IdempotencyKey.refine((key) => !/^(webhook|schedule):/.test(key), {
  message: 'Keys starting with "webhook:" or "schedule:" are reserved for webhook triggers and run schedules',
});
const callbackField = DispatchCallback.optional().describe(
  'POST this run’s events to `url`, signed as the webhook intake verifies (`X-Service-Signature`); the secret ' +
    'is in this dispatch’s answer only. Deliveries: `GET /v1/runs/{execution_id}/callbacks`.',
);
/** A run's budget (declared with the approvals, whose budget approvals name it). */
export const RunBudget = BudgetLimits;
const budgetField = BudgetLimits.optional().describe(
  'What the run may spend (issue 40 item 4). Before each step Weft checks what the run has spent; a step that ' +
    'would exceed a limit waits for a budget approval (`subject: "budget"` in `GET /v1/approvals`): approved ' +
    'with a raised budget it runs, rejected the run ends FAILED `budget_exhausted` with nothing charged for it.',
);
const idempotencyKeyField = RunIdempotencyKey.optional().describe(
  'Per workspace: a repeat returns the earlier execution with `was_duplicate: true`. ' +
    'Keys starting with `webhook:` or `schedule:` are reserved for webhook triggers and run schedules (422).',
);

const PlaybookDispatch = z
  .object({
    agent: z.literal('playbook'),
    input: z
      .object({
        steps: z.array(PlaybookStep).min(1).max(LIMITS.runs.maxSteps),
        params: z
          .record(z.string(), z.unknown())
          .optional()
          .refine((params) => JSON.stringify(params ?? {}).length <= LIMITS.runs.from.paramsChars, {
            message: `At most ${LIMITS.runs.from.paramsChars} characters as JSON`,
          })
          .describe('Values for the steps: a step takes one with `{"$from": "input.params.<name>"}` in its input.'),
      })
      .strict()
      .describe(
        `The steps, run in order (at most ${LIMITS.runs.maxSteps}). Any value of a step's input of the form ` +
          '`{"$from": "<JMESPath>"}` is replaced when the step starts by the expression\'s result over ' +
          "`{input, steps: [{tool, status, output}]}`: this input (with `event` for a webhook trigger's run) " +
          'and the earlier steps (`steps[0]` is step 0). One that fails or yields null fails the step with ' +
          '`input_unresolved`; an expression that does not compile is 422 at dispatch.',
      ),
    idempotency_key: idempotencyKeyField,
    ...runControlFields,
    budget: budgetField,
    callback: callbackField,
  })
  .strict();

const LlmDispatch = z
  .object({
    agent: z.literal('llm'),
    input: z
      .object({
        goal: z.string().trim().min(1).max(LIMITS.runs.llm.goalChars),
        max_steps: z
          .number()
          .int()
          .min(1)
          .max(LIMITS.runs.llm.maxSteps)
          .default(LIMITS.runs.llm.defaultMaxSteps)
          .describe('How many tool calls the model may make before it must answer.'),
        approval: z
          .enum(['writes', 'all', 'none'])
          .default('writes')
          .describe('Which of the model’s tool calls wait for a human approval.'),
      })
      .strict(),
    idempotency_key: idempotencyKeyField,
    ...runControlFields,
    budget: budgetField,
    callback: callbackField,
  })
  .strict();

export const DispatchRunRequest = z
  .discriminatedUnion('agent', [PlaybookDispatch, LlmDispatch])
  .meta({ id: 'DispatchRunRequest' });
export type DispatchRunRequest = z.output<typeof DispatchRunRequest>;

/**
 * `runs.dispatch`'s input (issue 40 item 2): the body of `POST /v1/runs` without `callback`, whose
 * secret the tool's stored answer would show again to every replay of its key. Its JSON Schema is one
 * object with `input` a union below it: OpenAI's and Anthropic's tool calling refuse a union at the
 * top of a tool's parameters (and with it every request that lists the tool); the body is then
 * checked as the route checks it.
 */
const ToolDispatchShape = z.strictObject({
  agent: z.enum(['playbook', 'llm']),
  input: z
    .union([PlaybookDispatch.shape.input, LlmDispatch.shape.input])
    .describe('playbook: `{steps}`; llm: `{goal, max_steps?, approval?}`, as in `POST /v1/runs`.'),
  idempotency_key: idempotencyKeyField,
  ...runControlFields,
});
const ToolDispatch = z.discriminatedUnion('agent', [
  PlaybookDispatch.omit({ callback: true }),
  LlmDispatch.omit({ callback: true }),
]);
// zod types a pipe's second stage as taking exactly the first's output; this one takes more (its
// defaults are optional), which is safe: the first stage's output is a valid input of the second.
export const DispatchRunToolInput = ToolDispatchShape.pipe(
  ToolDispatch as unknown as z.ZodType<z.output<typeof ToolDispatch>, z.output<typeof ToolDispatchShape>>,
);

/** A dispatch without its idempotency key and callback: the run a webhook trigger stores and dispatches. */
export const RunTemplate = z
  .discriminatedUnion('agent', [
    PlaybookDispatch.omit({ idempotency_key: true, callback: true }),
    LlmDispatch.omit({ idempotency_key: true, callback: true }),
  ])
  .meta({ id: 'RunTemplate' });
export type RunTemplate = z.output<typeof RunTemplate>;

export const DispatchRunResponse = z
  .object({
    execution_id: z.uuid(),
    run_id: z.uuid(),
    status: RunStatus,
    was_duplicate: z.boolean(),
    queued_reason: runControlView.queued_reason,
    debounced: z
      .boolean()
      .optional()
      .describe('True when the dispatch collapsed into a waiting debounced run (`flow.debounce`), whose id this is.'),
    callback: DispatchCallbackCreated.optional().describe(
      'The run’s callback, when the dispatch asked for one: its secret appears here only (not on a duplicate).',
    ),
  })
  .meta({ id: 'DispatchRunResponse' });
export type DispatchRunResponse = z.input<typeof DispatchRunResponse>;

export const RunErrorBody = z
  .object({
    code: z
      .string()
      .describe(
        'A domain error code (`validation_failed`, `insufficient_credits` …), `approval_rejected`, ' +
          '`budget_exhausted` (a step would exceed the run’s budget and its budget approval was rejected), ' +
          '`credential_revoked` (the dispatching credential was revoked or expired, or its user left the ' +
          'workspace, before a step or model turn), or for an llm run `max_steps_exceeded`, ' +
          '`upstream_unavailable` (its model failed) or `invalid_tool_call` (a step); `input_unresolved`: a ' +
          "playbook step's `$from` value failed or yielded null.",
      ),
    message: z.string(),
    step: z.number().int().nullable().describe('The step that failed (0-based), when one did.'),
  })
  .meta({ id: 'RunError' });

export const RunStepRow = z
  .object({
    step_id: z.uuid(),
    step_no: z.number().int(),
    kind: z.enum(['TOOL', 'DECISION']).describe('DECISION: recorded by `agent.record_decision`.'),
    tool: z.string(),
    input: z.record(z.string(), z.unknown()),
    requires_approval: z.boolean(),
    status: z.enum(['PENDING', 'RUNNING', 'SUCCEEDED', 'FAILED', 'SKIPPED']),
    output: z.unknown().nullable(),
    error: RunErrorBody.nullable(),
    credits_charged: z.number().int(),
    supersedes_step_id: z.uuid().nullable(),
    superseded: z.boolean().describe('A DECISION step a later decision superseded.'),
    reused_from_step_id: z
      .uuid()
      .nullable()
      .describe("A rerun's step whose output was copied from this step of the earlier run, without calling its tool."),
    policy_decision: PolicyDecisionBody.nullable().describe(
      'What the workspace’s approval rules (`/v1/approval-policies`) decided when the step was about to run; ' +
        'null until then, and for steps run before the rules existed.',
    ),
    started_at: timestamp.nullable(),
    finished_at: timestamp.nullable(),
  })
  .meta({ id: 'RunStep' });

export const RunSummary = z
  .object({
    execution_id: z.uuid(),
    run_id: z.uuid(),
    agent: z.enum(['playbook', 'llm']),
    status: RunStatus,
    error: RunErrorBody.nullable(),
    credits_charged: z.number().int(),
    ...runControlView,
    schedule_id: z.uuid().nullable().describe('The run schedule that dispatched it (`/v1/run-schedules`), if one did.'),
    parent_execution_id: z
      .uuid()
      .nullable()
      .describe('The run whose step started this one (`runs.dispatch` inside a run); null for a run no step started.'),
    root_execution_id: z
      .uuid()
      .nullable()
      .describe('The first run of its tree (the parent’s root, or the parent); null for a run no step started.'),
    connector_versions: z
      .array(z.object({ connector_id: z.uuid(), name: z.string(), version: z.number().int() }))
      .nullable()
      .describe(
        'The version of each of the workspace’s connectors when the run was dispatched (a child run: its ' +
          'parent’s). Its connector steps and its llm agent use these tools and schemas; a connector created ' +
          'later is not the run’s. Null for a run dispatched before runs kept versions (it uses the current ones).',
      ),
    created_at: timestamp,
    updated_at: timestamp,
  })
  .meta({ id: 'RunSummary' });
export type RunSummary = z.input<typeof RunSummary>;

export const RunDetail = RunSummary.extend({
  input: z.record(z.string(), z.unknown()),
  output: z.unknown().nullable(),
  steps: z.array(RunStepRow),
  approvals: z.array(ApprovalRow).describe('Its steps’ approvals, then its budget approvals.'),
  budget: BudgetLimits.nullable().describe(
    'What the run may spend (raised by approved budget approvals); null: no limit.',
  ),
  spent: BudgetSpent.describe('What it has spent so far (its duration until it finished).'),
}).meta({ id: 'Run' });
export type RunDetail = z.input<typeof RunDetail>;

export const RunList = z
  .object({
    runs: z.array(RunSummary),
    next_cursor: z.string().nullable().describe('Pass as `cursor` for the next (older) page; null on the last.'),
  })
  .meta({ id: 'RunList' });

export const RunListQuery = z.object({
  status: RunStatus.optional(),
  agent: z.enum(['playbook', 'llm']).optional(),
  tag: z
    .preprocess((value) => (typeof value === 'string' ? [value] : value), z.array(Tag).max(LIMITS.runs.tags.max))
    .optional()
    .describe('Repeatable (`?tag=a&tag=b`): runs carrying every tag given.'),
  schedule_id: z.uuid().optional().describe('Only the runs this run schedule dispatched.'),
  parent: z.uuid().optional().describe('Only the runs whose steps this run started (its children).'),
  limit: z.coerce.number().int().min(1).max(LIMITS.runs.list.max).default(LIMITS.runs.list.default),
  cursor: z.string().max(200).optional().describe('`next_cursor` of the previous page.'),
});
export type RunListQuery = z.output<typeof RunListQuery>;

export const ExecutionIdParams = z.object({ execution_id: z.uuid() });

export const AuditLink = z
  .object({
    seq: z.number().int(),
    kind: z.enum(['TOOL', 'APPROVAL', 'DECISION', 'RERUN', 'VOTE', 'BUDGET']),
    ref_id: z
      .uuid()
      .describe(
        'The step or approval the link covers; for RERUN, the rerun itself; for VOTE, the vote; for BUDGET, ' +
          'the budget approval.',
      ),
    entry: z.record(z.string(), z.unknown()).nullable().describe('What was hashed, recomputed from that row now.'),
    prev_hash: z.string(),
    hash: z.string(),
    created_at: timestamp,
  })
  .meta({ id: 'RunAuditLink' });

export const RunAudit = z
  .object({
    steps: z.array(AuditLink),
    valid: z.boolean(),
    length: z.number().int(),
    head_hash: z.string().nullable(),
    first_invalid_seq: z.number().int().nullable(),
    lineage: z
      .object({
        rerun_of: z.uuid(),
        head_hash: z.string().describe("The earlier run's chain head when this rerun began, named by link 0."),
        found: z.boolean().describe("Whether that hash is a link of the earlier run's chain."),
        earlier_valid: z.boolean().describe("Whether the earlier run's chain verifies."),
      })
      .nullable()
      .describe('For a rerun: the chain it continues from.'),
  })
  .meta({ id: 'RunAudit' });
export type RunAudit = z.input<typeof RunAudit>;

export const RecordDecisionInput = z.strictObject({
  execution_id: z.uuid(),
  decision: z.string().trim().min(1).max(LIMITS.runs.decisionChars),
  rationale: z.string().max(LIMITS.runs.decisionChars).optional(),
  supersedes_step_id: z.uuid().optional().describe('A head DECISION step of the same run, which this one revises.'),
});
export type RecordDecisionInput = z.output<typeof RecordDecisionInput>;

export const RecordDecisionOutput = z.object({
  step_id: z.uuid(),
  step_no: z.number().int(),
  execution_id: z.uuid(),
  supersedes_step_id: z.uuid().nullable(),
});

export const ReadDecisionsInput = z.strictObject({
  execution_id: z.uuid(),
  head_only: z.boolean().default(false).describe('Only decisions no later decision superseded.'),
});

export const Decision = z.object({
  step_id: z.uuid(),
  step_no: z.number().int(),
  decision: z.string(),
  rationale: z.string().nullable(),
  supersedes_step_id: z.uuid().nullable(),
  superseded: z.boolean(),
  recorded_at: timestamp,
});
export const ReadDecisionsOutput = z.object({ decisions: z.array(Decision) });
