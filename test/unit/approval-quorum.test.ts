import { expect } from 'chai';
import type { ApprovalVote, RunApproval } from '../../src/approvals/entities';
import { approvingVotes } from '../../src/approvals/quorum';
import type { ApprovalRules, ApprovalRulesPut } from '../../src/approvals/rules';
import { checkApprovalRules, decideStep } from '../../src/approvals/rules';
import { ValidationFailedError } from '../../src/platform/errors';

const ALICE = 'aaaaaaaa-aaaa-4aaa-8aaa-aaaaaaaaaaaa';
const BOB = 'bbbbbbbb-bbbb-4bbb-8bbb-bbbbbbbbbbbb';
const CAROL = 'cccccccc-cccc-4ccc-8ccc-cccccccccccc';

/** The 422 locations `checkApprovalRules` answers for a body (none: it passed). */
function issuesOf(body: ApprovalRulesPut, members?: string[]) {
  try {
    checkApprovalRules(body, members ? new Set(members) : undefined);
    return [];
  } catch (error) {
    expect(error).to.be.instanceOf(ValidationFailedError);
    return (error as ValidationFailedError).issues.map((issue) => issue.loc.join('.'));
  }
}

const gated = (extra: Record<string, unknown>, action = 'require_approval'): ApprovalRulesPut =>
  ({ rules: [{ match: { tool: 'agent.start_session' }, action, ...extra }], default_action: 'allow' }) as never;

describe('approval rules: approvers and deadlines (issue 32 parts 3-4)', () => {
  it('refuses approvers or a deadline on a rule that does not ask for approval', () => {
    const deadline = { after_seconds: 5, on_expiry: 'reject' };
    expect(issuesOf(gated({ deadline }, 'block'))).to.deep.equal(['body.rules.0.deadline']);
    expect(issuesOf(gated({ approvers: { min: 1, from: 'any_member' } }, 'allow'))).to.deep.equal([
      'body.rules.0.approvers',
    ]);
    expect(issuesOf(gated({ deadline }))).to.deep.equal([]);
  });

  it('wants escalate_to exactly with escalate, a quorum no larger than its list, and members only', () => {
    expect(issuesOf(gated({ deadline: { after_seconds: 5, on_expiry: 'escalate' } }))).to.deep.equal([
      'body.rules.0.deadline.escalate_to',
    ]);
    const stray = { after_seconds: 5, on_expiry: 'reject', escalate_to: { min: 1, from: 'any_member' } };
    expect(issuesOf(gated({ deadline: stray }))).to.deep.equal(['body.rules.0.deadline.escalate_to']);
    expect(issuesOf(gated({ approvers: { min: 3, from: [ALICE, BOB, BOB] } }))).to.deep.equal([
      'body.rules.0.approvers.min',
    ]);
    expect(issuesOf(gated({ approvers: { min: 1, from: [ALICE, CAROL] } }), [ALICE, BOB])).to.deep.equal([
      'body.rules.0.approvers.from.1',
    ]);
  });

  it('carries the rule’s approvers and deadline on a decision that asks for approval, and only then', async () => {
    const approvers = { min: 2, from: [ALICE, BOB] };
    const deadline = { after_seconds: 60, on_expiry: 'approve' as const };
    const rules = {
      version: 3,
      rules: [{ match: { tool: 'agent.start_session' }, action: 'require_approval', approvers, deadline }],
      default_action: 'allow',
      updated_by: null,
      updated_at: null,
    } as ApprovalRules;
    const filters = { evaluate: async () => ({ result: 'matched' as const }) };
    const step = { tool: 'agent.start_session', input: {}, requiresApproval: false, agent: 'playbook' };
    expect(await decideStep(rules, step, filters as never)).to.deep.equal({
      version: 3,
      action: 'require_approval',
      rule: 0,
      approvers,
      deadline,
    });
    expect(await decideStep(rules, { ...step, tool: 'ontology.search' }, filters as never)).to.deep.equal({
      version: 3,
      action: 'allow',
      rule: null,
    });
  });

  it('counts the approving votes of the people the approvers in force name', () => {
    const vote = (user: string, decision: ApprovalVote['decision'] = 'APPROVED') =>
      ({ user_id: user, decision }) as ApprovalVote;
    const votes = [vote(ALICE), vote(BOB), vote(CAROL, 'REJECTED')];
    const named = { approvers: { min: 2, from: [BOB, CAROL] } } as RunApproval;
    expect(approvingVotes(named, votes)).to.equal(1);
    const anyone = { approvers: { min: 2, from: 'any_member' } } as RunApproval;
    expect(approvingVotes(anyone, votes)).to.equal(2);
  });
});
