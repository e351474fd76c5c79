import type { EntityManager } from 'typeorm';
import { z } from 'zod';
import { filterSyntaxError } from '../filters/filter';
import type { FilterPool } from '../filters/pool';
import { queryFirst } from '../platform/db/query';
import { ValidationFailedError } from '../platform/errors';
import { LIMITS } from '../rules/limits';

/**
 * Approval rules per workspace (issue 32 part 1): which tool calls may run, need a person, or are
 * blocked, decided for every step of every run when it is about to run, whoever planned it. Not to
 * be confused with the approval *policy* (`policy.ts`, `/v1/approval-policy`), which says
 * who may resolve an approval once one exists.
 */

export const RULE_ACTIONS = ['allow', 'require_approval', 'block'] as const;
export type RuleAction = (typeof RULE_ACTIONS)[number];

/** Stricter wins: a step's own `requires_approval` and the rules both count. */
const STRICTNESS: Record<RuleAction, number> = { allow: 0, require_approval: 1, block: 2 };
export const stricter = (a: RuleAction, b: RuleAction): RuleAction => (STRICTNESS[a] >= STRICTNESS[b] ? a : b);

const Action = z.enum(RULE_ACTIONS);
const { approvers: APPROVERS, deadline: DEADLINE } = LIMITS.runs.approvalRules;

/** Who must approve (issue 32 part 4): `min` distinct people, from a list of user ids or any member. */
export const Approvers = z
  .strictObject({
    min: z
      .number()
      .int()
      .min(1)
      .max(APPROVERS.maxMin)
      .describe('How many distinct people must approve; one rejection rejects.'),
    from: z
      .union([z.array(z.uuid()).min(1).max(APPROVERS.maxFrom), z.literal('any_member')])
      .describe('The user ids who may vote (members of the workspace), or `any_member`.'),
  })
  .meta({ id: 'ApprovalApprovers' });
export type Approvers = z.output<typeof Approvers>;

export const EXPIRY_OUTCOMES = ['reject', 'approve', 'escalate'] as const;

/** What happens when nobody decided in time (issue 32 part 3). */
export const Deadline = z
  .strictObject({
    after_seconds: z
      .number()
      .int()
      .min(DEADLINE.minSeconds)
      .max(DEADLINE.maxSeconds)
      .describe('Seconds from the request (and from each escalation) until the deadline.'),
    on_expiry: z
      .enum(EXPIRY_OUTCOMES)
      .describe(
        '`reject`: the approval is rejected with `approval_expired` and the run fails; `approve`: the step ' +
          'runs, recorded as approved by the deadline; `escalate`: `escalate_to` become the approvers and a ' +
          'new deadline of `after_seconds` starts, at most `max_escalations` times, then it is rejected.',
      ),
    escalate_to: Approvers.optional().describe('`escalate` only, and required there: the approvers after it.'),
    max_escalations: z
      .number()
      .int()
      .min(1)
      .max(DEADLINE.maxEscalations)
      .optional()
      .describe('`escalate` only: how many times (1 when absent); the deadline after the last one rejects.'),
  })
  .meta({ id: 'ApprovalDeadline' });
export type Deadline = z.output<typeof Deadline>;

export const ApprovalRule = z
  .strictObject({
    match: z.strictObject({
      tool: z.string().min(1).max(100).describe('A capability name (`GET /v1/cap`), or `*` for every tool.'),
      agent: z.enum(['playbook', 'llm']).optional().describe('Only runs of this agent; every agent when absent.'),
      input_filter: z
        .string()
        .trim()
        .min(1)
        .max(LIMITS.webhook.filterChars)
        .optional()
        .describe(
          'JMESPath over the step’s input (e.g. ``top_k > `20` ``), under the trigger filters’ evaluation ' +
            'budget; the rule matches when it is truthy. One that fails or runs out of budget counts as ' +
            'matched, with at least `require_approval`.',
        ),
    }),
    action: Action,
    approvers: Approvers.optional().describe(
      '`require_approval` only: who must approve (a quorum); anyone allowed to resolve, once, when absent.',
    ),
    deadline: Deadline.optional().describe('`require_approval` only: when nobody decided in time.'),
  })
  .meta({ id: 'ApprovalRule' });
export type ApprovalRule = z.output<typeof ApprovalRule>;

export const ApprovalRulesPut = z
  .strictObject({
    rules: z
      .array(ApprovalRule)
      .max(LIMITS.runs.approvalRules.maxRules)
      .describe('Checked in order; the first that matches decides.'),
    default_action: Action.describe('What decides a step no rule matches.'),
  })
  .meta({ id: 'ApprovalRulesPut' });
export type ApprovalRulesPut = z.output<typeof ApprovalRulesPut>;

export const ApprovalRules = ApprovalRulesPut.extend({
  version: z.number().int().describe('Each PUT adds one; 0 is the built-in default (no rules, `allow`).'),
  updated_by: z.uuid().nullable(),
  updated_at: z.iso.datetime({ offset: true }).nullable(),
}).meta({ id: 'ApprovalRules' });
export type ApprovalRules = z.output<typeof ApprovalRules>;

/** What a step was decided at execution time, stored on it and covered by its chain link. */
export interface PolicyDecision {
  /** The rules' version that decided (0: none stored). */
  version: number;
  /** The action that applies: the stricter of the rules' and the step's own `requires_approval`. */
  action: RuleAction;
  /** The index of the rule that matched; null when the default action decided. */
  rule: number | null;
  /** Why a rule's input filter could not be evaluated (it then counted as matched). */
  filter_error?: string;
  /** The matching rule's approvers and deadline, when it asked for approval with them (issue 32 parts 3-4). */
  approvers?: Approvers;
  deadline?: Deadline;
}

export const PolicyDecisionBody = z
  .object({
    version: z.number().int().describe('The approval rules’ version that decided (0: none stored).'),
    action: Action.describe('What applies: the stricter of the matching rule and the step’s `requires_approval`.'),
    rule: z.number().int().nullable().describe('The index of the rule that matched; null: the default action.'),
    filter_error: z.string().optional().describe('Why the rule’s input filter failed (it then counted as matched).'),
    approvers: Approvers.optional().describe('The rule’s approvers, when it asked for approval with a quorum.'),
    deadline: Deadline.optional().describe('The rule’s deadline, when it asked for approval with one.'),
  })
  .meta({ id: 'PolicyDecision' });

const DEFAULT_RULES: ApprovalRules = {
  version: 0,
  rules: [],
  default_action: 'allow',
  updated_by: null,
  updated_at: null,
};

/** The workspace's current rules version, one row at most (none: the defaults); RLS picks the rows. */
export const CURRENT_RULES_SQL = `SELECT version, rules, default_action, updated_by, created_at
     FROM approval_rule_versions WHERE workspace_id = weft_current_workspace() ORDER BY version DESC LIMIT 1`;

interface RulesRow {
  version: number;
  rules: ApprovalRule[];
  default_action: RuleAction;
  updated_by: string;
  /** A Date from a row, an ISO string from a row read as JSON. */
  created_at: Date | string;
}

/** CURRENT_RULES_SQL's row as the rules it holds. */
export function rulesFromRow(row: RulesRow | null | undefined): ApprovalRules {
  if (!row) return DEFAULT_RULES;
  return {
    version: row.version,
    rules: row.rules,
    default_action: row.default_action,
    updated_by: row.updated_by,
    updated_at: new Date(row.created_at).toISOString(),
  };
}

/** The transaction's workspace's current rules, or the default. */
export async function readApprovalRules(m: EntityManager): Promise<ApprovalRules> {
  return rulesFromRow(await queryFirst<RulesRow>(m, CURRENT_RULES_SQL));
}

/** The user ids a rule's `approvers` (and its escalation's) name. */
export const namedApprovers = (body: ApprovalRulesPut): string[] => [
  ...new Set(
    body.rules.flatMap((rule) =>
      [rule.approvers?.from, rule.deadline?.escalate_to?.from].flatMap((from) => (Array.isArray(from) ? from : [])),
    ),
  ),
];

/**
 * Refuses input filters that do not compile (or fan out too far), as trigger filters are refused;
 * approvers or a deadline on a rule that does not ask for approval; a quorum larger than its list;
 * `escalate_to` without `escalate` or the reverse; and user ids that are not members (`members`).
 */
export function checkApprovalRules(body: ApprovalRulesPut, members?: ReadonlySet<string>): void {
  type Issue = { loc: (string | number)[]; msg: string; type: string };
  const issues = body.rules.flatMap((rule, index): Issue[] => {
    const at = (...path: (string | number)[]) => ['body', 'rules', index, ...path];
    const found: Issue[] = [];
    const why = rule.match.input_filter === undefined ? null : filterSyntaxError(rule.match.input_filter);
    if (why) found.push({ loc: at('match', 'input_filter'), msg: why, type: 'value_error' });
    for (const field of ['approvers', 'deadline'] as const) {
      if (rule[field] !== undefined && rule.action !== 'require_approval') {
        found.push({ loc: at(field), msg: `${field} go with action require_approval only`, type: 'value_error' });
      }
    }
    const quorum = (approvers: Approvers | undefined, ...path: string[]) => {
      if (!approvers || !Array.isArray(approvers.from)) return;
      if (approvers.min > new Set(approvers.from).size) {
        found.push({ loc: at(...path, 'min'), msg: 'min exceeds the people in from', type: 'value_error' });
      }
      for (const [i, user] of approvers.from.entries()) {
        if (members && !members.has(user)) {
          found.push({ loc: at(...path, 'from', i), msg: `${user} is not a member`, type: 'value_error' });
        }
      }
    };
    quorum(rule.approvers, 'approvers');
    const deadline = rule.deadline;
    if (deadline) {
      const escalates = deadline.on_expiry === 'escalate';
      if (escalates !== (deadline.escalate_to !== undefined)) {
        found.push({
          loc: at('deadline', 'escalate_to'),
          msg: 'escalate_to is required with on_expiry escalate, and only there',
          type: 'value_error',
        });
      }
      if (!escalates && deadline.max_escalations !== undefined) {
        found.push({
          loc: at('deadline', 'max_escalations'),
          msg: 'max_escalations goes with on_expiry escalate only',
          type: 'value_error',
        });
      }
      quorum(deadline.escalate_to, 'deadline', 'escalate_to');
    }
    return found;
  });
  if (issues.length > 0) throw new ValidationFailedError(issues);
}

/**
 * Appends the next version under a lock on the workspace's versions (two concurrent PUTs get two
 * versions, in order); the earlier versions stay, as steps decided by them name them.
 */
export async function saveApprovalRules(
  m: EntityManager,
  workspaceId: string,
  userId: string,
  body: ApprovalRulesPut,
): Promise<void> {
  await m.query(`SELECT pg_advisory_xact_lock(hashtextextended('approval_rules:' || $1, 0))`, [workspaceId]);
  await m.query(
    `INSERT INTO approval_rule_versions (workspace_id, version, default_action, rules, updated_by)
     SELECT $1, coalesce(max(version), 0) + 1, $2, $3, $4 FROM approval_rule_versions WHERE workspace_id = $1`,
    [workspaceId, body.default_action, JSON.stringify(body.rules), userId],
  );
}

/** A decision asking for approval carries its rule's approvers and deadline, fixed with it. */
const withQuorum = (decision: PolicyDecision, rule: ApprovalRule): PolicyDecision =>
  decision.action === 'require_approval'
    ? {
        ...decision,
        ...(rule.approvers ? { approvers: rule.approvers } : {}),
        ...(rule.deadline ? { deadline: rule.deadline } : {}),
      }
    : decision;

/**
 * Decides a step against the rules: the first rule whose tool, agent and input filter match, else the
 * default; then the stricter of that and the step's own `requires_approval`. A filter that errs or
 * runs out of its budget counts as matched and asks at least for approval: a rule meant to catch an
 * input never lets it through by failing.
 */
export async function decideStep(
  rules: ApprovalRules,
  step: StepToDecide,
  filters: Pick<FilterPool, 'evaluate'>,
): Promise<PolicyDecision> {
  const own: RuleAction = step.requiresApproval ? 'require_approval' : 'allow';
  for (const [index, rule] of rules.rules.entries()) {
    if (rule.match.tool !== '*' && rule.match.tool !== step.tool) continue;
    if (rule.match.agent && rule.match.agent !== step.agent) continue;
    if (rule.match.input_filter !== undefined) {
      const outcome = await filters.evaluate(rule.match.input_filter, {
        headers: {},
        body: Buffer.from(JSON.stringify(step.input)),
        contentType: 'application/json',
        trigger: { id: '', slug: '' },
        bare: true,
        // The pool's fair share (issue 43 item 3): a workspace's filters queue behind its own.
        workspaceId: step.workspaceId,
      });
      if (outcome.result === 'not_matched') continue;
      if (outcome.result !== 'matched') {
        const action = stricter(stricter(rule.action, 'require_approval'), own);
        const decision = {
          version: rules.version,
          action,
          rule: index,
          filter_error: outcome.error ?? 'filter_failed',
        };
        return withQuorum(decision, rule);
      }
    }
    return withQuorum({ version: rules.version, action: stricter(rule.action, own), rule: index }, rule);
  }
  // No rule names it: a tool that reaches outside Weft and is not read-only (a connector's) asks a person.
  const fallback = step.approvalByDefault ? stricter(own, 'require_approval') : own;
  return { version: rules.version, action: stricter(rules.default_action, fallback), rule: null };
}

/** A step as the rules judge it; `approvalByDefault` is its tool's (a connector's write tool). */
export interface StepToDecide {
  tool: string;
  input: Record<string, unknown>;
  requiresApproval: boolean;
  agent: string;
  approvalByDefault?: boolean;
  /** Whose step it is: its input filters queue in the pool as that workspace's (issue 43 item 3). */
  workspaceId?: string;
}

/**
 * The decision when no input filter has to run for it (no rule matching the step's tool and agent has
 * one before a rule that decides), so it can be taken inside a transaction; null otherwise, for
 * `decideStep` outside one.
 */
export async function decideStepWithoutFilters(
  rules: ApprovalRules,
  step: StepToDecide,
): Promise<PolicyDecision | null> {
  const first = rules.rules.find(
    (rule) =>
      (rule.match.tool === '*' || rule.match.tool === step.tool) &&
      (!rule.match.agent || rule.match.agent === step.agent),
  );
  if (first?.match.input_filter !== undefined) return null;
  return decideStep(rules, step, UNREACHABLE_FILTERS);
}

// decideStepWithoutFilters only decides when no filter can be reached.
const UNREACHABLE_FILTERS: Pick<FilterPool, 'evaluate'> = {
  evaluate: () => Promise.reject(new Error('an input filter reached without the filter pool')),
};

/** The failure of a step the rules block; an llm agent gets it as the tool's result. */
export const blockedByPolicy = (stepNo: number, tool: string, decision: PolicyDecision) => ({
  code: 'blocked_by_policy',
  message:
    `The workspace's approval rules (version ${decision.version}, ` +
    `${decision.rule === null ? 'default action' : `rule ${decision.rule}`}) block ${tool}; it did not run`,
  step: stepNo,
});
