import { z } from 'zod';
import { IdempotencyKey } from '../capabilities/idempotency';
import { ChangeSetOutcome } from '../change-sets/schemas';
import { LIMITS } from '../rules/limits';
import { DispatchCallback, DispatchCallbackCreated } from '../run-callbacks/schemas';
import { Approvers, Deadline, PolicyDecisionBody } from './approval-rules';
import { runControlFields, runControlView, Tag } from './control-schemas';
import { APPROVAL_STATUSES, DISPATCHER_MAY_APPROVE, RUN_STATUSES } from './entities';

const timestamp = z.iso.datetime({ offset: true });

export const RunStatus = z.enum(RUN_STATUSES);
export const ApprovalStatus = z.enum(APPROVAL_STATUSES);

export const PlaybookStep = z
  .object({
    tool: z.string().min(1).max(100).describe('A capability name, as listed by `GET /v1/cap`.'),
    input: z.record(z.string(), z.unknown()).default({}).describe("The tool's input; checked against its schema."),
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
const idempotencyKeyField = RunIdempotencyKey.optional().describe(
  'Per workspace: a repeat returns the earlier execution with `was_duplicate: true`. ' +
    'Keys starting with `webhook:` or `schedule:` are reserved for webhook triggers and run schedules (422).',
);

const PlaybookDispatch = z
  .object({
    agent: z.literal('playbook'),
    input: z
      .object({ steps: z.array(PlaybookStep).min(1).max(LIMITS.runs.maxSteps) })
      .strict()
      .describe(`The steps, run in order (at most ${LIMITS.runs.maxSteps}).`),
    idempotency_key: idempotencyKeyField,
    ...runControlFields,
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
    callback: callbackField,
  })
  .strict();

export const DispatchRunRequest = z
  .discriminatedUnion('agent', [PlaybookDispatch, LlmDispatch])
  .meta({ id: 'DispatchRunRequest' });
export type DispatchRunRequest = z.output<typeof DispatchRunRequest>;

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
          '`credential_revoked` (the dispatching credential was revoked or expired, or its user left the ' +
          'workspace, before a step or model turn), or for an llm run `max_steps_exceeded`, ' +
          '`upstream_unavailable` (its model failed) or `invalid_tool_call` (a step).',
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

export const ApprovalRow = z
  .object({
    approval_id: z.uuid(),
    subject: z
      .enum(['run_step', 'change_set'])
      .describe('What waits on it: a run’s step, or a staged change-set (`change_set_id`, issue 31 part 4).'),
    execution_id: z.uuid().nullable().describe('The run whose step waits; null for a change-set’s approval.'),
    change_set_id: z
      .uuid()
      .nullable()
      .describe('The staged change-set (`GET /v1/ontology/change-sets/{id}`); null for a run’s.'),
    status: ApprovalStatus,
    step: z
      .object({ step_no: z.number().int(), tool: z.string(), input: z.record(z.string(), z.unknown()) })
      .nullable()
      .describe('The run step that waits; null for a change-set’s approval.'),
    notes: z.string().nullable(),
    edited_input: z
      .record(z.string(), z.unknown())
      .nullable()
      .describe('The input the reviewer approved the step with instead of `step.input` (the original); null if none.'),
    response: z
      .string()
      .nullable()
      .describe('A RESPOND’s message, which the llm agent got instead of the tool’s result.'),
    resolved_by: z.uuid().nullable().describe('The user who resolved it.'),
    resolved_by_credential: z
      .object({
        kind: z.enum(['user_jwt', 'api_key', 'mcp_token']),
        id: z.uuid().nullable().describe('The API key’s id, or the user JWT’s `jti`.'),
      })
      .nullable()
      .describe('The credential it was resolved with; null while pending, and when cancelled.'),
    requested_at: timestamp,
    resolved_at: timestamp.nullable(),
    policy_decision: z
      .object({
        version: z.number().int(),
        rule: z.number().int().nullable().describe('The index of the rule; null: the default action.'),
      })
      .nullable()
      .describe(
        'The approval rules’ version and rule that asked for this approval (`/v1/approval-policies`); null when ' +
          'it was asked for by the step’s own `requires_approval` before the rules decided, or before they existed.',
      ),
    approvers: Approvers.nullable().describe(
      'Who must approve now (after an escalation, its `escalate_to`): `min` distinct people; null: one ' +
        'decision by anyone allowed to resolve.',
    ),
    deadline: Deadline.nullable().describe('The rule’s deadline, if it set one.'),
    expires_at: timestamp
      .nullable()
      .describe('When the deadline applies its `on_expiry` (moved by each escalation); null without a deadline.'),
    escalations: z.number().int().describe('How many times the deadline escalated it.'),
    expired: z
      .boolean()
      .describe('The deadline decided it (`status` approved or rejected), not a person; `resolved_by` is null.'),
    votes: z
      .array(
        z.object({
          user_id: z.uuid(),
          decision: z.enum(['APPROVED', 'REJECTED', 'RESPOND']),
          credential: z.object({ kind: z.enum(['user_jwt', 'api_key', 'mcp_token']), id: z.uuid().nullable() }),
          notes: z.string().nullable(),
          voted_at: timestamp,
        }),
      )
      .describe('With `approvers`: each person’s vote so far, oldest first (each a VOTE link of the chain).'),
  })
  .meta({ id: 'Approval' });
export type ApprovalRow = z.input<typeof ApprovalRow>;

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
    created_at: timestamp,
    updated_at: timestamp,
  })
  .meta({ id: 'RunSummary' });
export type RunSummary = z.input<typeof RunSummary>;

export const RunDetail = RunSummary.extend({
  input: z.record(z.string(), z.unknown()),
  output: z.unknown().nullable(),
  steps: z.array(RunStepRow),
  approvals: z.array(ApprovalRow),
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
  limit: z.coerce.number().int().min(1).max(LIMITS.runs.list.max).default(LIMITS.runs.list.default),
  cursor: z.string().max(200).optional().describe('`next_cursor` of the previous page.'),
});
export type RunListQuery = z.output<typeof RunListQuery>;

export const ExecutionIdParams = z.object({ execution_id: z.uuid() });
export const ApprovalIdParams = z.object({ approval_id: z.uuid() });

export const ApprovalListQuery = z.object({
  status: ApprovalStatus.optional(),
  limit: z.coerce.number().int().min(1).max(LIMITS.runs.list.max).default(LIMITS.runs.list.default),
});

export const ApprovalPolicy = z
  .object({
    dispatcher_may_approve: z
      .enum(DISPATCHER_MAY_APPROVE)
      .describe(
        'Whether the user who dispatched a run may resolve its approvals through another credential of theirs ' +
          '(the dispatching credential never may): `when_alone` (the default) while they are the workspace’s only ' +
          'member, `always`, or `never`.',
      ),
  })
  .meta({ id: 'ApprovalPolicy' });
export type ApprovalPolicy = z.output<typeof ApprovalPolicy>;

export const ApprovalPolicyPatch = z
  .strictObject({ dispatcher_may_approve: ApprovalPolicy.shape.dispatcher_may_approve })
  .meta({ id: 'ApprovalPolicyPatch' });

export const ApprovalList = z.object({ approvals: z.array(ApprovalRow) }).meta({ id: 'ApprovalList' });

export const ResolveApprovalRequest = z
  .object({
    decision: z
      .enum(['APPROVED', 'REJECTED', 'RESPOND'])
      .describe('RESPOND (llm runs only): the step does not run; the model gets `message` as its result.'),
    notes: z.string().max(LIMITS.runs.notesChars).optional(),
    input: z
      .record(z.string(), z.unknown())
      .optional()
      .describe('APPROVED only: the step runs with this input instead, checked against the tool’s schema (422).'),
    message: z
      .string()
      .trim()
      .min(1)
      .max(LIMITS.runs.notesChars)
      .optional()
      .describe('RESPOND only, and required there: what the llm agent receives as the tool’s result.'),
  })
  .strict()
  .superRefine((body, ctx) => {
    if (body.input !== undefined && body.decision !== 'APPROVED') {
      ctx.addIssue({ code: 'custom', path: ['input'], message: 'An edited input goes with APPROVED only' });
    }
    if ((body.message !== undefined) !== (body.decision === 'RESPOND')) {
      ctx.addIssue({ code: 'custom', path: ['message'], message: 'RESPOND needs a message, and only RESPOND has one' });
    }
  })
  .meta({ id: 'ResolveApprovalRequest' });
export type ResolveApprovalRequest = z.output<typeof ResolveApprovalRequest>;

export const ResolveApprovalResponse = z
  .object({
    approval_id: z.uuid(),
    decision: z.enum(['APPROVED', 'REJECTED', 'RESPOND']),
    execution_id: z.uuid().nullable().describe('The run; null for a change-set’s approval.'),
    change_set: ChangeSetOutcome.optional().describe(
      'Only for a change-set’s approval: `applied`, `conflicted` (with its conflicts; nothing written) or ' +
        '`rejected`. Absent for a run’s, whose answer is as it always was.',
    ),
    status: ApprovalStatus.describe('The approval’s status after this decision: `pending` while a quorum is short.'),
    approvals_remaining: z.number().int().describe('How many more approving votes the quorum needs (0 once decided).'),
    dispatcher_resolved: z
      .object({
        policy: z.enum(['when_alone', 'always']),
        message: z.string(),
      })
      .nullable()
      .describe(
        'Set when the person who dispatched the run (or staged the change-set) decided, through a credential ' +
          'of theirs that does not stand for the dispatching one: the approval policy that let them, and why ' +
          '(`when_alone`: they are the workspace’s only member). Null when another member decided.',
      ),
  })
  .meta({ id: 'ResolveApprovalResponse' });
export type ResolveApprovalResponse = z.input<typeof ResolveApprovalResponse>;

export const AuditLink = z
  .object({
    seq: z.number().int(),
    kind: z.enum(['TOOL', 'APPROVAL', 'DECISION', 'RERUN', 'VOTE']),
    ref_id: z.uuid().describe('The step or approval the link covers; for RERUN, the rerun itself; for VOTE, the vote.'),
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
