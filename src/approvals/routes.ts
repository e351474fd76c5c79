import { defineRoute } from '../platform/api/route';
import { LIMITS } from '../rules/limits';
import { ApprovalRules, ApprovalRulesPut } from './rules';
import {
  ApprovalIdParams,
  ApprovalList,
  ApprovalListQuery,
  ApprovalPolicy,
  ApprovalPolicyPatch,
  ApprovalRow,
  ResolveApprovalRequest,
  ResolveApprovalResponse,
} from './schemas';
import type { ApprovalService } from './service';

const approvalNotFound = 'Unknown approval, or one of another workspace';

export const approvalRoutes = (approvals: ApprovalService) => [
  defineRoute({
    method: 'get',
    path: '/v1/approvals',
    operationId: 'listApprovals',
    summary: 'Approvals of the workspace, newest first',
    description:
      'Each with its step (tool, input), execution_id and requested_at, the rule that asked for it ' +
      '(`policy_decision`), its deadline (`expires_at`, `deadline`, `escalations`, `expired`), its approvers and ' +
      'the `votes` so far; filter by `status`. ' +
      `\`limit\` up to ${LIMITS.runs.list.max} (default ${LIMITS.runs.list.default}).`,
    tags: ['approvals'],
    scope: 'runs:read',
    query: ApprovalListQuery,
    response: ApprovalList,
    handler: ({ auth, query }) => approvals.listApprovals(auth, query),
  }),
  defineRoute({
    method: 'get',
    path: '/v1/approvals/{approval_id}',
    operationId: 'getApproval',
    summary: 'One approval',
    description:
      'The approval with its step (tool, input), status, who resolved it and when, the rule that asked for it, ' +
      'its deadline (`expires_at`) and, with approvers, each vote.',
    tags: ['approvals'],
    scope: 'runs:read',
    params: ApprovalIdParams,
    response: ApprovalRow,
    errors: { 404: approvalNotFound },
    handler: ({ auth, params }) => approvals.getApproval(auth, params.approval_id),
  }),
  defineRoute({
    method: 'post',
    path: '/v1/approvals/{approval_id}/resolve',
    operationId: 'resolveApproval',
    summary: 'Approve, reject or respond to a pending approval, or vote on one that needs several approvers',
    description:
      'Commits PENDING → APPROVED or REJECTED exactly once, records the caller as `resolved_by` and its ' +
      'credential as `resolved_by_credential`, then signals the run. APPROVED: the step runs and the run ' +
      'continues; with `input`, the step runs with that edit instead (checked against the tool’s schema, 422 ' +
      'otherwise; the original stays in `step.input`, the edit in `edited_input`). The approval rules judge ' +
      'the edit as the step’s own input: one they block is 422 `blocked_by_policy` naming the rule, one they ' +
      'send to approvers this caller alone does not satisfy is 422 `approval_required` naming them; the ' +
      'approval still waits. REJECTED: the run fails ' +
      'with error code `approval_rejected` and later steps never run. RESPOND (llm runs only, with `message`): ' +
      'the step does not run (SKIPPED, `reviewer_responded`) and the model gets the message as its result. ' +
      `\`notes\` at most ${LIMITS.runs.notesChars} characters. Separation of duties: the credential that ` +
      'dispatched the run, or one minted from it or from the same key, never resolves it (403 ' +
      '`approval_by_dispatcher`), and its user does so through another credential only as ' +
      '`GET /v1/approval-policy` allows (403 `approval_by_dispatching_user`; `dispatcher_resolved` in the ' +
      'answer says what allowed it). MCP tokens ' +
      'never hold `approvals:write`. Past the approval’s `expires_at` a resolve is 409 `approval_expired`: the ' +
      'deadline’s `on_expiry` applies instead (of a resolve and the expiry exactly one wins). With `approvers` ' +
      '(a rule’s quorum): each call is one person’s vote (403 `not_an_approver` for a user not in `from`, 409 ' +
      '`already_voted` for a second vote), the separation rules apply to each vote, the approval stays ' +
      '`pending` until `min` distinct people approved (`approvals_remaining`), and one rejection (or RESPOND) ' +
      'decides at once; an edited `input` needs `min` 1.',
    tags: ['approvals'],
    scope: 'approvals:write',
    params: ApprovalIdParams,
    body: ResolveApprovalRequest,
    example: { decision: 'APPROVED', notes: 'Looks right.' },
    response: ResolveApprovalResponse,
    errors: {
      403:
        'approval_by_dispatcher (the credential that dispatched the run, or one that stands for it) or ' +
        'approval_by_dispatching_user (its ' +
        'user, where the approval policy wants another member), or not_an_approver (not in the rule’s ' +
        '`approvers.from`); the detail says why',
      404: approvalNotFound,
      409:
        'Already resolved (or cancelled), its run has finished, its deadline has passed (approval_expired), or ' +
        'the caller voted on it already (already_voted)',
    },
    handler: ({ auth, params, body }) => approvals.resolve(auth, params.approval_id, body),
  }),
  defineRoute({
    method: 'get',
    path: '/v1/approval-policy',
    operationId: 'getApprovalPolicy',
    summary: 'Who may resolve the approvals of a run: the workspace’s policy',
    description:
      'The credential that dispatched a run never resolves its approvals, and MCP tokens never resolve any. ' +
      '`dispatcher_may_approve` says whether the dispatching *user* may, through another credential of theirs ' +
      '(a user JWT, the console, another key): `when_alone` (the default) while they are the only member of the ' +
      'workspace, `always`, or `never`. Another member always may.',
    tags: ['approvals'],
    scope: 'runs:read',
    response: ApprovalPolicy,
    handler: ({ auth }) => approvals.approvalPolicy(auth),
  }),
  defineRoute({
    method: 'patch',
    path: '/v1/approval-policy',
    operationId: 'updateApprovalPolicy',
    summary: 'Set the workspace’s approval policy',
    description:
      'Sets `dispatcher_may_approve` (`when_alone`, `always` or `never`) for the workspace; it applies to every ' +
      'resolve from then on. Needs `approvals:write`, which MCP tokens never hold.',
    tags: ['approvals'],
    scope: 'approvals:write',
    body: ApprovalPolicyPatch,
    example: { dispatcher_may_approve: 'never' },
    response: ApprovalPolicy,
    handler: ({ auth, body }) => approvals.setApprovalPolicy(auth, body),
  }),
  defineRoute({
    method: 'get',
    path: '/v1/approval-policies',
    operationId: 'getApprovalRules',
    summary: 'Which tool calls may run, need a person, or are blocked: the workspace’s approval rules',
    description:
      'Ordered rules `{match: {tool, agent?, input_filter?}, action, approvers?, deadline?}` and a ' +
      '`default_action`, decided for every ' +
      'step of every run (playbook and llm) when it is about to run: the first rule that matches decides, and ' +
      'the stricter of it and the step’s own `requires_approval` applies (`allow` < `require_approval` < ' +
      '`block`). A blocked step fails with `blocked_by_policy` (nothing charged); an llm agent gets that as ' +
      'the tool’s result. The decision (`version`, `action`, `rule`) is recorded on the step and in its ' +
      'audit link. A `require_approval` rule may name `approvers` (`min` distinct people `from` a list of ' +
      'members or `any_member`) and a `deadline` (`after_seconds`, `on_expiry`: `reject`, `approve` or ' +
      '`escalate` to `escalate_to` at most `max_escalations` times), fixed on the approval when it is ' +
      'requested. Not `/v1/approval-policy` (singular), which says who may resolve an approval. Without ' +
      'stored rules: version 0, no rules, `allow`.',
    tags: ['approvals'],
    scope: 'runs:read',
    response: ApprovalRules,
    handler: ({ auth }) => approvals.approvalRules(auth),
  }),
  defineRoute({
    method: 'put',
    path: '/v1/approval-policies',
    operationId: 'putApprovalRules',
    summary: 'Replace the workspace’s approval rules (a new version)',
    description:
      'Stores the rules as the next version; steps already decided keep the decision of the version they ' +
      `were decided by. At most ${LIMITS.runs.approvalRules.maxRules} rules; an \`input_filter\` is JMESPath ` +
      'over the step’s input, compiled now (a syntax error is 422) and evaluated under the trigger filters’ ' +
      'budget. `approvers` and `deadline` go on `require_approval` rules only; `from` must list members and ' +
      `hold at least \`min\` people; \`after_seconds\` is ${LIMITS.runs.approvalRules.deadline.minSeconds} to ` +
      `${LIMITS.runs.approvalRules.deadline.maxSeconds}; \`escalate_to\` goes with \`on_expiry: escalate\` ` +
      'only (422 otherwise). Needs `approval_policies:manage`, which MCP tokens never hold.',
    tags: ['approvals'],
    scope: 'approval_policies:manage',
    body: ApprovalRulesPut,
    example: {
      rules: [
        { match: { tool: 'agent.start_session', agent: 'llm' }, action: 'block' },
        { match: { tool: 'ontology.search', input_filter: 'top_k > `20`' }, action: 'require_approval' },
        {
          match: { tool: 'agent.record_finding' },
          action: 'require_approval',
          approvers: { min: 2, from: 'any_member' },
          deadline: { after_seconds: 86400, on_expiry: 'reject' },
        },
      ],
      default_action: 'allow',
    },
    response: ApprovalRules,
    handler: ({ auth, body }) => approvals.setApprovalRules(auth, body),
  }),
];
