import { z } from 'zod';
import { LIMITS } from '../rules/limits';
import { APPROVAL_STATUSES, APPROVAL_SUBJECTS, DISPATCHER_MAY_APPROVE } from './entities';
import { Approvers, Deadline } from './rules';

const timestamp = z.iso.datetime({ offset: true });

export const ApprovalStatus = z.enum(APPROVAL_STATUSES);

// What resolving a staged change-set's approval answers (the resolve's `change_set`): declared here,
// below src/change-sets, because the approvals' contract names it; src/change-sets uses these.

export const CHANGE_SET_STATUSES = ['pending', 'applied', 'rejected', 'conflicted', 'withdrawn'] as const;
export type ChangeSetStatus = (typeof CHANGE_SET_STATUSES)[number];

export const ChangeSetConflict = z
  .object({
    kind: z
      .enum(['node_deleted', 'edge_deleted', 'property_changed', 'refused', 'credential_revoked'])
      .describe(
        '`node_deleted`: a node it references (or deletes) is gone; `edge_deleted`: an edge it deletes is gone; ' +
          '`property_changed`: a property differs from its `before`; ' +
          '`refused`: the graph refused a write (an edge end missing, a claim conflict); `credential_revoked`: the ' +
          'credential that staged it was revoked or expired, or its user left the workspace.',
      ),
    ref: z.string().nullable(),
    node_id: z.uuid().nullable(),
    key: z.string().nullable(),
    before: z.unknown().describe('The value at staging (property_changed).'),
    now: z.unknown().describe('The value found at apply (property_changed).'),
    message: z.string(),
  })
  .meta({ id: 'ChangeSetConflict' });
export type ChangeSetConflict = z.infer<typeof ChangeSetConflict>;

export const ChangeSetApplied = z
  .object({ node_ids: z.array(z.uuid()), edge_ids: z.array(z.uuid()) })
  .nullable()
  .describe('The nodes the apply created or referenced and the edges it created.');

/** What a resolve of a change-set's approval answers beside the approval's own fields. */
export const ChangeSetOutcome = z
  .object({
    change_set_id: z.uuid(),
    status: z.enum(CHANGE_SET_STATUSES),
    conflicts: z.array(ChangeSetConflict),
    applied: ChangeSetApplied,
  })
  .meta({ id: 'ChangeSetOutcome' });
export type ChangeSetOutcome = z.input<typeof ChangeSetOutcome>;

// A run's budget (issue 40 item 4): declared here, below src/runs, because a budget approval's card and
// its resolve's `edits` name it; src/runs uses these for the dispatch and the run.
const { budget: BUDGET } = LIMITS.runs;

export const BudgetLimits = z
  .strictObject({
    max_credits: z
      .number()
      .int()
      .min(0)
      .max(BUDGET.maxCredits)
      .optional()
      .describe('The most credits the run’s steps may be charged (a step’s price counted before it runs).'),
    max_steps: z
      .number()
      .int()
      .min(0)
      .max(BUDGET.maxSteps)
      .optional()
      .describe('The most tool steps the run may run (0: each step waits for a person’s raise).'),
    max_duration_seconds: z
      .number()
      .int()
      .min(0)
      .max(BUDGET.maxDurationSeconds)
      .optional()
      .describe('The most wall time since its first step started, waits for approvals included.'),
  })
  .meta({ id: 'RunBudget' });
export type BudgetLimits = z.output<typeof BudgetLimits>;

export const BudgetSpent = z
  .object({
    credits: z.number().int().describe('Credits its steps were charged.'),
    steps: z.number().int().describe('Tool steps it ran (started).'),
    duration_seconds: z.number().int().describe('Wall time since its first step started.'),
  })
  .meta({ id: 'RunSpent' });
export type BudgetSpent = z.output<typeof BudgetSpent>;

export const BUDGET_LIMITS = ['max_credits', 'max_steps', 'max_duration_seconds'] as const;
export type BudgetLimit = (typeof BUDGET_LIMITS)[number];

/** What a budget approval shows beside the step it wants: the budget, the spend and what the step would add. */
export const BudgetAsk = z
  .object({
    limits: BudgetLimits.describe('The run’s budget when the step asked.'),
    spent: BudgetSpent.describe('What the run had spent when the step asked.'),
    step_credits: z.number().int().describe('The credits the step’s tool charges.'),
    exceeded: z.array(z.enum(BUDGET_LIMITS)).describe('The limits the step would exceed.'),
    edits: BudgetLimits.nullable().describe('The raised limits the reviewer approved with; null until then.'),
  })
  .meta({ id: 'BudgetAsk' });
export type BudgetAsk = z.input<typeof BudgetAsk>;

export const ApprovalRow = z
  .object({
    approval_id: z.uuid(),
    subject: z
      .enum(APPROVAL_SUBJECTS)
      .describe(
        'What waits on it: a run’s step, a staged change-set (`change_set_id`, issue 31 part 4), or a run’s ' +
          'budget (`budget`: the step in `step` would exceed it, issue 40 item 4).',
      ),
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
    budget: BudgetAsk.optional().describe('Only for a budget approval: the budget, the spend and the step’s price.'),
  })
  .meta({ id: 'Approval' });
export type ApprovalRow = z.input<typeof ApprovalRow>;

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
    edits: BudgetLimits.optional().describe(
      'A budget approval’s APPROVED only, and required there: the raised budget, each limit the step exceeds ' +
        'raised so the step fits (422); limits not given stay as they were.',
    ),
  })
  .strict()
  .superRefine((body, ctx) => {
    if (body.input !== undefined && body.decision !== 'APPROVED') {
      ctx.addIssue({ code: 'custom', path: ['input'], message: 'An edited input goes with APPROVED only' });
    }
    if (body.edits !== undefined && body.decision !== 'APPROVED') {
      ctx.addIssue({ code: 'custom', path: ['edits'], message: 'A raised budget goes with APPROVED only' });
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
