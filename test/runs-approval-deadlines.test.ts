import { expect } from 'chai';
import { sleep } from './helpers/eventually';
import { as } from './helpers/http';
import { finished, pendingApproval, runUntil } from './helpers/runs';
import { parseSse } from './helpers/sse';
import { getStack } from './helpers/stack';
import { newMember, newTenant } from './helpers/tenants';

type Client = ReturnType<typeof as>;

/** Approval rules that send `agent.start_session` to approval with `extra` (approvers, a deadline). */
const gate = (extra: Record<string, unknown>) => ({
  rules: [{ match: { tool: 'agent.start_session' }, action: 'require_approval', ...extra }],
  default_action: 'allow',
});

/** A one-step playbook run whose step the rules above gate; answers its id and pending approval. */
async function gatedRun(client: Client, name = 'gated') {
  const dispatched = await client.post('/v1/runs', {
    agent: 'playbook',
    input: { steps: [{ tool: 'agent.start_session', input: { name } }] },
  });
  expect(dispatched.status, dispatched.text).to.equal(202);
  const id = dispatched.body.execution_id;
  return { id, approval: await pendingApproval(client, id) };
}

const resolve = (client: Client, approvalId: string, decision = 'APPROVED') =>
  client.post(`/v1/approvals/${approvalId}/resolve`, { decision });

/** The run's whole event stream (it ends after `run.finished`). */
async function eventsOf(token: string, executionId: string) {
  const response = await fetch(`${getStack().baseUrl}/v1/runs/${executionId}/events`, {
    headers: { authorization: `Bearer ${token}` },
  });
  return parseSse(await response.text())
    .map((frame) => frame.data)
    .filter(Boolean);
}

/** The run's chain, after checking it holds. */
async function chainOf(client: Client, executionId: string) {
  const audit = (await client.get(`/v1/runs/${executionId}/audit`)).body;
  expect(audit.valid, JSON.stringify(audit)).to.equal(true);
  return audit.steps;
}

describe('approval deadlines (issue 32 part 3)', function () {
  this.timeout(90_000);

  it('refuses bad approvers and deadlines on PUT, and accepts good ones', async () => {
    const { user_jwt, user_id } = await newTenant();
    const put = (body: unknown) => as(user_jwt).put('/v1/approval-policies', body);
    const tooShort = await put(gate({ deadline: { after_seconds: 0, on_expiry: 'reject' } }));
    expect(tooShort.status).to.equal(422);
    expect(tooShort.body.detail[0].loc).to.deep.equal(['body', 'rules', 0, 'deadline', 'after_seconds']);
    const noTarget = await put(gate({ deadline: { after_seconds: 5, on_expiry: 'escalate' } }));
    expect(noTarget.status).to.equal(422);
    expect(noTarget.body.detail[0].loc).to.deep.equal(['body', 'rules', 0, 'deadline', 'escalate_to']);
    const onAllow = await put({
      rules: [{ match: { tool: '*' }, action: 'allow', deadline: { after_seconds: 5, on_expiry: 'approve' } }],
      default_action: 'allow',
    });
    expect(onAllow.status).to.equal(422);
    expect(onAllow.body.detail[0].loc).to.deep.equal(['body', 'rules', 0, 'deadline']);
    const stranger = '00000000-0000-4000-8000-000000000001';
    const notMember = await put(gate({ approvers: { min: 1, from: [user_id, stranger] } }));
    expect(notMember.status).to.equal(422);
    expect(notMember.body.detail[0].loc).to.deep.equal(['body', 'rules', 0, 'approvers', 'from', 1]);
    const tooMany = await put(gate({ approvers: { min: 2, from: [user_id] } }));
    expect(tooMany.status).to.equal(422);
    expect(tooMany.body.detail[0].loc).to.deep.equal(['body', 'rules', 0, 'approvers', 'min']);
    const extra = { approvers: { min: 1, from: 'any_member' }, deadline: { after_seconds: 60, on_expiry: 'reject' } };
    const good = await put(gate(extra));
    expect(good.status, good.text).to.equal(200);
    expect(good.body.rules[0]).to.deep.include(extra);
  });

  it('rejects with approval_expired when nobody decides in time; a late resolve is 409', async () => {
    const { api_key, user_jwt } = await newTenant(1000);
    await as(user_jwt).put('/v1/approval-policies', gate({ deadline: { after_seconds: 2, on_expiry: 'reject' } }));
    const { id, approval } = await gatedRun(as(api_key));
    expect(approval.expires_at).to.be.a('string');
    const window = Date.parse(approval.expires_at) - Date.parse(approval.requested_at);
    expect(window).to.be.within(1900, 2500);
    expect(approval.deadline).to.deep.equal({ after_seconds: 2, on_expiry: 'reject' });
    expect(approval.policy_decision).to.deep.equal({ version: 1, rule: 0 });
    const listed = (await as(user_jwt).get('/v1/approvals?status=pending')).body.approvals;
    expect(listed.find((row: any) => row.approval_id === approval.approval_id).expires_at).to.equal(
      approval.expires_at,
    );

    const run = await finished(as(api_key), id, { timeoutMs: 20_000 });
    expect(run.status).to.equal('FAILED');
    expect(run.error).to.include({ code: 'approval_expired', step: 0 });
    expect(Date.parse(run.updated_at)).to.be.at.least(Date.parse(approval.expires_at));
    const expired = (await as(user_jwt).get(`/v1/approvals/${approval.approval_id}`)).body;
    expect(expired).to.deep.include({ status: 'rejected', expired: true, resolved_by: null });
    expect(expired.resolved_by_credential).to.equal(null);

    const late = await resolve(as(user_jwt), approval.approval_id);
    expect(late.status).to.equal(409);
    expect(late.body.detail.error).to.equal('approval_resolved');

    const events = await eventsOf(api_key, id);
    const resolved = events.find((event) => event.type === 'approval.resolved');
    expect(resolved.data).to.deep.include({ status: 'rejected', expired: true, resolved_by: null });
    expect(events.find((event) => event.type === 'approval.requested').data.expires_at).to.equal(approval.expires_at);
    const link = (await chainOf(as(api_key), id)).find((step: any) => step.kind === 'APPROVAL');
    expect(link.entry).to.deep.include({ status: 'rejected', expired: true, expires_at: approval.expires_at });
  });

  it('approves when the deadline says so: the step runs, recorded as approved by no person', async () => {
    const { api_key, user_jwt } = await newTenant(1000);
    await as(user_jwt).put('/v1/approval-policies', gate({ deadline: { after_seconds: 2, on_expiry: 'approve' } }));
    const { id, approval } = await gatedRun(as(api_key));
    const run = await finished(as(api_key), id, { timeoutMs: 20_000 });
    expect(run.status).to.equal('SUCCEEDED');
    expect(run.steps[0].status).to.equal('SUCCEEDED');
    expect(run.approvals[0]).to.deep.include({
      approval_id: approval.approval_id,
      status: 'approved',
      expired: true,
      resolved_by: null,
      resolved_by_credential: null,
    });
    const link = (await chainOf(as(api_key), id)).find((step: any) => step.kind === 'APPROVAL');
    expect(link.entry).to.deep.include({ status: 'approved', expired: true, resolved_by: null });
    expect(link.entry).not.to.have.property('resolved_by_credential');
  });

  it('escalates to other approvers with a new deadline, then rejects after the last escalation', async () => {
    const { api_key, user_jwt, workspace_id } = await newTenant(1000);
    const first = await newMember(workspace_id);
    const second = await newMember(workspace_id);
    await as(user_jwt).put(
      '/v1/approval-policies',
      gate({
        approvers: { min: 1, from: [first.user_id] },
        deadline: {
          after_seconds: 2,
          on_expiry: 'escalate',
          escalate_to: { min: 1, from: [second.user_id] },
          max_escalations: 1,
        },
      }),
    );
    // Escalated, then approved by the person it went to.
    const { id, approval } = await gatedRun(as(api_key));
    expect(approval.approvers).to.deep.equal({ min: 1, from: [first.user_id] });
    expect((await resolve(as(second.user_jwt), approval.approval_id)).status).to.equal(403);
    const escalated = await runUntil(
      as(api_key),
      id,
      (run) => run.approvals[0]?.escalations === 1,
      'the approval to escalate',
      { timeoutMs: 20_000 },
    );
    const now = escalated.approvals[0];
    expect(now).to.deep.include({ status: 'pending', approvers: { min: 1, from: [second.user_id] } });
    expect(Date.parse(now.expires_at)).to.be.above(Date.parse(approval.expires_at));
    expect(escalated.status).to.equal('AWAITING_APPROVAL');
    const refused = await resolve(as(first.user_jwt), approval.approval_id);
    expect(refused.status).to.equal(403);
    expect(refused.body.detail.error).to.equal('not_an_approver');
    const approved = await resolve(as(second.user_jwt), approval.approval_id);
    expect(approved.status, approved.text).to.equal(200);
    expect(approved.body).to.deep.include({ status: 'approved', approvals_remaining: 0 });
    const run = await finished(as(api_key), id);
    expect(run.status).to.equal('SUCCEEDED');
    const events = await eventsOf(api_key, id);
    const escalation = events.find((event) => event.type === 'approval.escalated');
    expect(escalation.data).to.deep.include({ escalations: 1, approvers: { min: 1, from: [second.user_id] } });

    // Nobody answers either deadline: escalated once (the bound), then rejected.
    const other = await gatedRun(as(api_key), 'unanswered');
    const ended = await finished(as(api_key), other.id, { timeoutMs: 25_000 });
    expect(ended.status).to.equal('FAILED');
    expect(ended.error.code).to.equal('approval_expired');
    expect(ended.approvals[0]).to.deep.include({ status: 'rejected', expired: true, escalations: 1 });
  });

  it('a resolve racing the expiry: exactly one of them wins', async () => {
    const { api_key, user_jwt } = await newTenant(1000);
    await as(user_jwt).put('/v1/approval-policies', gate({ deadline: { after_seconds: 2, on_expiry: 'reject' } }));
    const { id, approval } = await gatedRun(as(api_key));
    await sleep(Math.max(0, Date.parse(approval.expires_at) - Date.now() - 30));
    const answers = await Promise.all(
      [0, 15, 30, 45, 60].map((ms) => sleep(ms).then(() => resolve(as(user_jwt), approval.approval_id))),
    );
    const won = answers.filter((answer) => answer.status === 200);
    expect(won.length).to.be.at.most(1);
    for (const answer of answers.filter((a) => a.status !== 200)) expect(answer.status).to.equal(409);
    const run = await finished(as(api_key), id, { timeoutMs: 20_000 });
    const final = run.approvals[0];
    if (won.length === 1) {
      expect(final).to.deep.include({ status: 'approved', expired: false });
      expect(run.status).to.equal('SUCCEEDED');
    } else {
      expect(final).to.deep.include({ status: 'rejected', expired: true });
      expect(run.error.code).to.equal('approval_expired');
    }
    // One APPROVAL link whichever won.
    expect((await chainOf(as(api_key), id)).filter((step: any) => step.kind === 'APPROVAL')).to.have.length(1);
  });
});

describe('approval quorum (issue 32 part 4)', function () {
  this.timeout(90_000);

  it('a 2-of-3 quorum: a concurrent double vote counts once, an outsider is refused, two approvals pass', async () => {
    const { api_key, user_jwt, workspace_id } = await newTenant(1000);
    const [a, b, c, outsider] = await Promise.all([1, 2, 3, 4].map(() => newMember(workspace_id)));
    const from = [a!.user_id, b!.user_id, c!.user_id];
    await as(user_jwt).put('/v1/approval-policies', gate({ approvers: { min: 2, from } }));
    const { id, approval } = await gatedRun(as(api_key));
    expect(approval.approvers).to.deep.equal({ min: 2, from });
    expect(approval.votes).to.deep.equal([]);

    // Voters approve the input as asked: an edit needs a quorum of one.
    const edit = await as(a!.user_jwt).post(`/v1/approvals/${approval.approval_id}/resolve`, {
      decision: 'APPROVED',
      input: { name: 'edited' },
    });
    expect(edit.status).to.equal(422);
    expect(edit.body.detail[0].loc).to.deep.equal(['body', 'input']);

    const outside = await resolve(as(outsider!.user_jwt), approval.approval_id);
    expect(outside.status).to.equal(403);
    expect(outside.body.detail.error).to.equal('not_an_approver');

    // The same person twice at once: one vote counts, the other is 409.
    const twice = await Promise.all([
      resolve(as(a!.user_jwt), approval.approval_id),
      resolve(as(a!.api_key), approval.approval_id),
    ]);
    expect(twice.map((answer) => answer.status).sort()).to.deep.equal([200, 409]);
    const counted = twice.find((answer) => answer.status === 200)!;
    expect(counted.body).to.deep.include({ status: 'pending', approvals_remaining: 1 });
    expect(twice.find((answer) => answer.status === 409)!.body.detail.error).to.equal('already_voted');
    const waiting = (await as(user_jwt).get(`/v1/approvals/${approval.approval_id}`)).body;
    expect(waiting.status).to.equal('pending');
    expect(waiting.votes.map((vote: any) => [vote.user_id, vote.decision])).to.deep.equal([[a!.user_id, 'APPROVED']]);
    expect((await as(api_key).get(`/v1/runs/${id}`)).body.status).to.equal('AWAITING_APPROVAL');

    const second = await resolve(as(b!.user_jwt), approval.approval_id);
    expect(second.status, second.text).to.equal(200);
    expect(second.body).to.deep.include({ status: 'approved', approvals_remaining: 0 });
    const run = await finished(as(api_key), id);
    expect(run.status).to.equal('SUCCEEDED');
    expect(run.approvals[0].votes.map((vote: any) => vote.user_id)).to.deep.equal([a!.user_id, b!.user_id]);
    expect(run.approvals[0].resolved_by).to.equal(b!.user_id);
    const late = await resolve(as(c!.user_jwt), approval.approval_id);
    expect(late.status).to.equal(409);

    const chain = await chainOf(as(api_key), id);
    const votes = chain.filter((link: any) => link.kind === 'VOTE');
    expect(votes.map((link: any) => link.entry.user_id)).to.deep.equal([a!.user_id, b!.user_id]);
    const approvalAt = chain.findIndex((link: any) => link.kind === 'APPROVAL');
    expect(approvalAt).to.be.above(chain.indexOf(votes[1]));
    const voted = (await eventsOf(api_key, id)).filter((event) => event.type === 'approval.voted');
    expect(voted).to.have.length(2);
  });

  it('one rejection rejects; the separation rules apply to every vote', async () => {
    const { api_key, user_jwt, user_id, workspace_id } = await newTenant(1000);
    const a = await newMember(workspace_id);
    const b = await newMember(workspace_id);
    // The dispatcher's own user is named, but the separation rules still hold for their vote.
    await as(user_jwt).put('/v1/approval-policies', gate({ approvers: { min: 2, from: 'any_member' } }));
    const { id, approval } = await gatedRun(as(api_key));
    const byDispatcher = await resolve(as(api_key), approval.approval_id);
    expect(byDispatcher.status).to.equal(403);
    expect(byDispatcher.body.detail.error).to.equal('approval_by_dispatcher');
    // Three members: the dispatching user's other credential may not vote (when_alone).
    const byDispatchingUser = await resolve(as(user_jwt), approval.approval_id);
    expect(byDispatchingUser.status).to.equal(403);
    expect(byDispatchingUser.body.detail.error).to.equal('approval_by_dispatching_user');
    expect((await resolve(as(a.user_jwt), approval.approval_id)).body.status).to.equal('pending');
    const rejected = await resolve(as(b.user_jwt), approval.approval_id, 'REJECTED');
    expect(rejected.body).to.deep.include({ status: 'rejected' });
    const run = await finished(as(api_key), id);
    expect(run.status).to.equal('FAILED');
    expect(run.error.code).to.equal('approval_rejected');
    expect(run.approvals[0].votes.map((vote: any) => vote.decision)).to.deep.equal(['APPROVED', 'REJECTED']);
    expect(run.approvals[0].votes.map((vote: any) => vote.user_id)).not.to.include(user_id);
  });
});
