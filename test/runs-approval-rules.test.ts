import { expect } from 'chai';
import { as } from './helpers/http';
import { finished, pendingApproval, runUntil } from './helpers/runs';
import { newMember, newTenant } from './helpers/tenants';

type Client = ReturnType<typeof as>;

const putRules = (client: Client, body: unknown) => client.put('/v1/approval-policies', body);

const search = (client: Client, topK: number) =>
  client.post('/v1/runs', {
    agent: 'playbook',
    input: { steps: [{ tool: 'ontology.search', input: { query: 'ada lovelace', top_k: topK } }] },
  });

/** The step's link in the run's audit chain, after checking the chain holds. */
async function stepLink(client: Client, executionId: string, stepNo: number) {
  const audit = (await client.get(`/v1/runs/${executionId}/audit`)).body;
  expect(audit.valid).to.equal(true);
  return audit.steps.find((link: any) => link.kind === 'TOOL' && link.entry.step_no === stepNo);
}

describe('approval rules per workspace (issue 32 part 1)', function () {
  this.timeout(90_000);

  it('answers the default, versions each PUT, and refuses bad filters and callers without the scope', async () => {
    const { api_key, user_jwt, workspace_id } = await newTenant();
    const initial = await as(user_jwt).get('/v1/approval-policies');
    expect(initial.status, initial.text).to.equal(200);
    expect(initial.body).to.deep.include({ version: 0, rules: [], default_action: 'allow' });

    const first = await putRules(as(user_jwt), { rules: [], default_action: 'require_approval' });
    expect(first.status, first.text).to.equal(200);
    expect(first.body).to.deep.include({ version: 1, default_action: 'require_approval' });
    const rules = [{ match: { tool: 'ontology.search', input_filter: 'top_k > `5`' }, action: 'block' }];
    const second = await putRules(as(user_jwt), { rules, default_action: 'allow' });
    expect(second.body).to.deep.include({ version: 2, rules, default_action: 'allow' });

    const bad = await putRules(as(user_jwt), {
      rules: [{ match: { tool: 'ontology.search', input_filter: 'top_k >' }, action: 'block' }],
      default_action: 'allow',
    });
    expect(bad.status).to.equal(422);
    expect(bad.body.detail[0].loc).to.deep.equal(['body', 'rules', 0, 'match', 'input_filter']);
    const unknownAction = await putRules(as(user_jwt), { rules: [], default_action: 'maybe' });
    expect(unknownAction.status).to.equal(422);

    // A key without approval_policies:manage may read the rules, not change them; nor may an MCP token.
    const reader = (
      await as(user_jwt).post('/v1/auth/me/api-keys', { name: 'reader', scopes: ['runs:read', 'runs:write'] })
    ).body.token;
    const refused = await putRules(as(reader), { rules: [], default_action: 'allow' });
    expect(refused.status).to.equal(403);
    expect(refused.body.detail).to.equal('Missing scope approval_policies:manage');
    const minted = await as(user_jwt).post('/v1/mcp/token', { workspace_id });
    expect((await putRules(as(minted.body.token), { rules: [], default_action: 'allow' })).status).to.equal(403);
    expect((await as(reader).get('/v1/approval-policies')).body.version).to.equal(2);
    expect((await as(api_key).get('/v1/approval-policies')).body.version).to.equal(2);
  });

  it('blocks a tool for an llm agent that never asked for approval: the model gets the refusal', async () => {
    const { api_key, user_jwt } = await newTenant(1000);
    await putRules(as(user_jwt), {
      rules: [{ match: { tool: 'billing.credits_balance', agent: 'llm' }, action: 'block' }],
      default_action: 'allow',
    });
    const dispatched = await as(api_key).post('/v1/runs', {
      agent: 'llm',
      input: { goal: 'what is my balance', approval: 'none' },
    });
    expect(dispatched.status, dispatched.text).to.equal(202);
    const id = dispatched.body.execution_id;
    const run = await finished(as(api_key), id);
    // The local model answers from the tool's result, which is the refusal: the run went on after it.
    expect(run.status).to.equal('SUCCEEDED');
    expect(run.output.answer).to.match(/billing\.credits_balance failed: .*block/);
    const [step] = run.steps;
    expect(step).to.deep.include({ status: 'FAILED', credits_charged: 0, requires_approval: false });
    expect(step.error.code).to.equal('blocked_by_policy');
    expect(step.policy_decision).to.deep.equal({ version: 1, action: 'block', rule: 0 });
    expect(run.approvals).to.deep.equal([]);
    const link = await stepLink(as(api_key), id, step.step_no);
    expect(link.entry.policy_decision).to.deep.equal({ version: 1, action: 'block', rule: 0 });
  });

  it('fails a blocked playbook step with blocked_by_policy and charges nothing', async () => {
    const { api_key, user_jwt } = await newTenant(1000);
    await putRules(as(user_jwt), {
      rules: [{ match: { tool: '*', agent: 'playbook' }, action: 'block' }],
      default_action: 'allow',
    });
    const dispatched = await search(as(api_key), 3);
    const run = await finished(as(api_key), dispatched.body.execution_id);
    expect(run.status).to.equal('FAILED');
    expect(run.error).to.include({ code: 'blocked_by_policy', step: run.steps[0].step_no });
    expect(run.credits_charged).to.equal(0);
    expect(run.steps[0].policy_decision).to.deep.equal({ version: 1, action: 'block', rule: 0 });
  });

  it('asks for approval only above an amount; a changed policy never changes a decision made', async () => {
    const { api_key, user_jwt } = await newTenant(1000);
    await putRules(as(user_jwt), {
      rules: [{ match: { tool: 'ontology.search', input_filter: 'top_k > `5`' }, action: 'require_approval' }],
      default_action: 'allow',
    });
    const small = await search(as(api_key), 3);
    const smallRun = await finished(as(api_key), small.body.execution_id);
    expect(smallRun.status).to.equal('SUCCEEDED');
    expect(smallRun.approvals).to.deep.equal([]);
    expect(smallRun.steps[0].policy_decision).to.deep.equal({ version: 1, action: 'allow', rule: null });

    const large = await search(as(api_key), 10);
    const id = large.body.execution_id;
    const approval = await pendingApproval(as(api_key), id);
    expect(approval.step.tool).to.equal('ontology.search');

    // Rules that would now allow it (version 2) leave the decision version 1 made.
    await putRules(as(user_jwt), { rules: [], default_action: 'allow' });
    const waiting = (await as(api_key).get(`/v1/runs/${id}`)).body;
    expect(waiting.status).to.equal('AWAITING_APPROVAL');
    expect(waiting.steps[0].policy_decision).to.deep.equal({ version: 1, action: 'require_approval', rule: 0 });

    const resolved = await as(user_jwt).post(`/v1/approvals/${approval.approval_id}/resolve`, {
      decision: 'APPROVED',
    });
    expect(resolved.status, resolved.text).to.equal(200);
    const run = await runUntil(as(api_key), id, (body) => body.status === 'SUCCEEDED', 'the approved run');
    expect(run.steps[0].policy_decision).to.deep.equal({ version: 1, action: 'require_approval', rule: 0 });
    const link = await stepLink(as(api_key), id, run.steps[0].step_no);
    expect(link.entry.policy_decision).to.deep.include({ version: 1, action: 'require_approval' });
  });

  it('keeps the stricter of the rules and the step’s own requires_approval', async () => {
    const { api_key, user_jwt } = await newTenant(1000);
    await putRules(as(user_jwt), {
      rules: [{ match: { tool: 'ontology.search' }, action: 'allow' }],
      default_action: 'allow',
    });
    const dispatched = await as(api_key).post('/v1/runs', {
      agent: 'playbook',
      input: { steps: [{ tool: 'ontology.search', input: { query: 'ada' }, requires_approval: true }] },
    });
    const id = dispatched.body.execution_id;
    await pendingApproval(as(api_key), id);
    const run = (await as(api_key).get(`/v1/runs/${id}`)).body;
    expect(run.steps[0].policy_decision).to.deep.equal({ version: 1, action: 'require_approval', rule: 0 });
    await as(api_key).post(`/v1/runs/${id}/cancel`);
  });
});

describe('approve with edits, and respond to an llm run (issue 32 part 2)', function () {
  this.timeout(90_000);

  it('runs the step with the edited input, refuses an edit its tool’s schema refuses, and chains both', async () => {
    const { api_key, user_jwt } = await newTenant(1000);
    const dispatched = await as(api_key).post('/v1/runs', {
      agent: 'playbook',
      input: { steps: [{ tool: 'ontology.search', input: { query: 'ada', top_k: 3 }, requires_approval: true }] },
    });
    const id = dispatched.body.execution_id;
    const approval = await pendingApproval(as(api_key), id);
    const resolve = (body: unknown) => as(user_jwt).post(`/v1/approvals/${approval.approval_id}/resolve`, body);

    const refused = await resolve({ decision: 'APPROVED', input: { query: 'grace', top_k: 'many' } });
    expect(refused.status).to.equal(422);
    expect(refused.body.detail[0].loc).to.deep.equal(['body', 'input', 'top_k']);
    expect((await resolve({ decision: 'REJECTED', input: { query: 'x' } })).status).to.equal(422);

    const edited = { query: 'grace hopper', top_k: 2 };
    const approved = await resolve({ decision: 'APPROVED', input: edited });
    expect(approved.status, approved.text).to.equal(200);
    const run = await runUntil(as(api_key), id, (body) => body.status === 'SUCCEEDED', 'the edited run');
    expect(run.steps[0].input).to.deep.equal(edited);
    expect(run.approvals[0]).to.deep.include({ status: 'approved', edited_input: edited });
    expect(run.approvals[0].step.input).to.deep.equal({ query: 'ada', top_k: 3 });

    const audit = (await as(api_key).get(`/v1/runs/${id}/audit`)).body;
    expect(audit.valid).to.equal(true);
    const approvalLink = audit.steps.find((link: any) => link.kind === 'APPROVAL');
    expect(approvalLink.entry).to.deep.include({ input: { query: 'ada', top_k: 3 }, edited_input: edited });
    const toolLink = audit.steps.find((link: any) => link.kind === 'TOOL');
    expect(toolLink.entry.input).to.deep.equal(edited);
  });

  it('NM-4: rules judge edits: a blocked one is 422 naming the rule; one for other approvers needs them', async () => {
    const owner = await newTenant(1000);
    const reviewer = await newMember(owner.workspace_id);
    const named = await newMember(owner.workspace_id);
    const session = (name: string) =>
      as(owner.api_key).post('/v1/runs', {
        agent: 'playbook',
        input: { steps: [{ tool: 'agent.start_session', input: { name } }] },
      });
    // The review's rules: a block for one input, approval for the tool; and an input only `named` may pass.
    const stored = await putRules(as(owner.user_jwt), {
      rules: [
        { match: { tool: 'agent.start_session', input_filter: 'contains(name, `forbidden`)' }, action: 'block' },
        {
          match: { tool: 'agent.start_session', input_filter: 'contains(name, `sensitive`)' },
          action: 'require_approval',
          approvers: { min: 1, from: [named.user_id] },
        },
        { match: { tool: 'agent.start_session' }, action: 'require_approval' },
      ],
      default_action: 'allow',
    });
    expect(stored.status, stored.text).to.equal(200);
    // Control: the blocked input, dispatched as is, fails.
    const direct = await finished(as(owner.api_key), (await session('forbidden-direct')).body.execution_id);
    expect(direct.error).to.include({ code: 'blocked_by_policy' });

    const id = (await session('harmless')).body.execution_id;
    const approval = await pendingApproval(as(owner.api_key), id);
    const resolve = (client: Client, name: string) =>
      client.post(`/v1/approvals/${approval.approval_id}/resolve`, { decision: 'APPROVED', input: { name } });
    // The attack: a reviewer edits the gated call into the input the rules block.
    const blocked = await resolve(as(reviewer.user_jwt), 'forbidden-via-edit');
    expect(blocked.status, blocked.text).to.equal(422);
    expect(blocked.body.detail).to.deep.equal([
      {
        loc: ['body', 'input'],
        msg:
          "The workspace's approval rules (version 1, rule 0) block agent.start_session with this input; " +
          'it did not run',
        type: 'blocked_by_policy',
      },
    ]);
    // An input the rules send to another approver: this reviewer cannot pass it; the one it names can.
    const others = await resolve(as(reviewer.user_jwt), 'sensitive-edit');
    expect(others.status, others.text).to.equal(422);
    expect(others.body.detail[0]).to.include({ type: 'approval_required' });
    expect(others.body.detail[0].msg).to.include('rule 1').and.to.include(named.user_id);
    expect((await as(owner.api_key).get(`/v1/runs/${id}`)).body.status).to.equal('AWAITING_APPROVAL');

    const approved = await resolve(as(named.user_jwt), 'sensitive-edit');
    expect(approved.status, approved.text).to.equal(200);
    const run = await finished(as(owner.api_key), id);
    expect(run.status).to.equal('SUCCEEDED');
    expect(run.steps[0].input).to.deep.equal({ name: 'sensitive-edit' });
    expect(run.approvals[0]).to.deep.include({ status: 'approved', resolved_by: named.user_id });
  });

  it('RESPOND: the step does not run and the model receives the reviewer’s message, then answers', async () => {
    const { api_key, user_jwt } = await newTenant(1000);
    const dispatched = await as(api_key).post('/v1/runs', {
      agent: 'llm',
      input: { goal: 'what is my balance', approval: 'all' },
    });
    const id = dispatched.body.execution_id;
    const approval = await pendingApproval(as(api_key), id);
    const message = 'Do not look it up; it is 42 credits';
    const noMessage = await as(user_jwt).post(`/v1/approvals/${approval.approval_id}/resolve`, {
      decision: 'RESPOND',
    });
    expect(noMessage.status).to.equal(422);
    const responded = await as(user_jwt).post(`/v1/approvals/${approval.approval_id}/resolve`, {
      decision: 'RESPOND',
      message,
    });
    expect(responded.status, responded.text).to.equal(200);
    const run = await finished(as(api_key), id);
    expect(run.status).to.equal('SUCCEEDED');
    expect(run.output.answer).to.contain(message);
    expect(run.steps[0]).to.deep.include({ status: 'SKIPPED', credits_charged: 0 });
    expect(run.steps[0].error.code).to.equal('reviewer_responded');
    expect(run.approvals[0]).to.deep.include({ status: 'responded', response: message });
    const audit = (await as(api_key).get(`/v1/runs/${id}/audit`)).body;
    expect(audit.valid).to.equal(true);
    expect(audit.steps.find((link: any) => link.kind === 'APPROVAL').entry.response).to.equal(message);
  });

  it('refuses RESPOND for a playbook run (422); the approval still waits', async () => {
    const { api_key, user_jwt } = await newTenant(1000);
    const dispatched = await as(api_key).post('/v1/runs', {
      agent: 'playbook',
      input: { steps: [{ tool: 'ontology.search', input: { query: 'ada' }, requires_approval: true }] },
    });
    const id = dispatched.body.execution_id;
    const approval = await pendingApproval(as(api_key), id);
    const refused = await as(user_jwt).post(`/v1/approvals/${approval.approval_id}/resolve`, {
      decision: 'RESPOND',
      message: 'no',
    });
    expect(refused.status).to.equal(422);
    expect(refused.body.detail[0].loc).to.deep.equal(['body', 'decision']);
    expect((await as(api_key).get(`/v1/approvals/${approval.approval_id}`)).body.status).to.equal('pending');
    await as(api_key).post(`/v1/runs/${id}/cancel`);
  });
});
