import { expect } from 'chai';
import { startReceiver } from './helpers/callback-receiver';
import { eventually } from './helpers/eventually';
import { as } from './helpers/http';
import { finished, pendingApproval, runUntil } from './helpers/runs';
import type { Stack } from './helpers/stack';
import { bootStack } from './helpers/stack';
import { creditBalance, newTenant } from './helpers/tenants';
import { deliver, newTrigger } from './helpers/webhooks';

type Client = ReturnType<typeof as>;

const twoSteps = (tool: string, input: Record<string, unknown> = {}) => ({
  agent: 'playbook',
  input: {
    steps: [
      { tool, input },
      { tool, input },
    ],
  },
});
const search = { query: 'ada lovelace' };

const dispatch = async (client: Client, body: Record<string, unknown>) => {
  const dispatched = await client.post('/v1/runs', body);
  expect(dispatched.status, dispatched.text).to.equal(202);
  return dispatched.body.execution_id as string;
};

const resolve = (client: Client, approvalId: string, body: Record<string, unknown>) =>
  client.post(`/v1/approvals/${approvalId}/resolve`, body);

describe('runs: budgets (issue 40 item 4)', function () {
  this.timeout(90_000);

  it('max_steps 1 pauses a 2-step run before step 1 for a budget approval; a raise lets it finish', async () => {
    const { api_key, user_jwt } = await newTenant();
    const client = as(api_key);
    const id = await dispatch(client, { ...twoSteps('billing.credits_balance'), budget: { max_steps: 1 } });

    const approval = await pendingApproval(client, id);
    expect(approval).to.deep.include({ subject: 'budget', execution_id: id, status: 'pending' });
    expect(approval.step).to.deep.include({ step_no: 1, tool: 'billing.credits_balance' });
    expect(approval.budget).to.deep.include({ limits: { max_steps: 1 }, step_credits: 0, exceeded: ['max_steps'] });
    expect(approval.budget.spent).to.include({ credits: 0, steps: 1 });
    const run = (await client.get(`/v1/runs/${id}`)).body;
    expect(run.steps.map((step: any) => step.status)).to.deep.equal(['SUCCEEDED', 'PENDING']);
    expect(run.budget).to.deep.equal({ max_steps: 1 });
    expect(run.spent).to.include({ credits: 0, steps: 1 });

    // The inbox lists it with the spend and the step it wants.
    const inbox = (await client.get('/v1/approvals?status=pending')).body.approvals;
    expect(inbox.find((row: any) => row.approval_id === approval.approval_id)).to.deep.include({ subject: 'budget' });

    // The run's dispatcher may not raise its own budget, as for a step's approval.
    const own = await resolve(client, approval.approval_id, { decision: 'APPROVED', edits: { max_steps: 2 } });
    expect(own.status).to.equal(403);
    expect(own.body.detail).to.deep.include({ error: 'approval_by_dispatcher' });

    const approved = await resolve(as(user_jwt), approval.approval_id, {
      decision: 'APPROVED',
      edits: { max_steps: 2 },
      notes: 'one more',
    });
    expect(approved.status, approved.text).to.equal(200);
    expect(approved.body).to.include({ status: 'approved', execution_id: id, approvals_remaining: 0 });
    const done = await finished(client, id);
    expect(done.status).to.equal('SUCCEEDED');
    expect(done.budget).to.deep.equal({ max_steps: 2 });
    expect(done.spent).to.include({ steps: 2 });
    const row = done.approvals.find((a: any) => a.approval_id === approval.approval_id);
    expect(row).to.deep.include({ status: 'approved', notes: 'one more' });
    expect(row.budget.edits).to.deep.equal({ max_steps: 2 });

    // Decided once: a second resolve is 409.
    const again = await resolve(as(user_jwt), approval.approval_id, { decision: 'REJECTED' });
    expect(again.status).to.equal(409);

    // The decision is a link of the run's audit chain, between the steps it separated, and the chain holds.
    const audit = (await client.get(`/v1/runs/${id}/audit`)).body;
    expect(audit.valid).to.equal(true);
    expect(audit.steps.map((link: any) => link.kind)).to.deep.equal(['TOOL', 'BUDGET', 'TOOL']);
    expect(audit.steps[1]).to.deep.include({ ref_id: approval.approval_id });
    expect(audit.steps[1].entry).to.deep.include({ status: 'approved', edits: { max_steps: 2 }, notes: 'one more' });
    expect(audit.steps[1].entry.budget).to.deep.equal({ max_steps: 1 });

    // A rerun keeps the budget as it last stood: from step 1, one step runs again, within max_steps 2.
    const rerun = await client.post(`/v1/runs/${id}/rerun`, { from_step: 1 });
    expect(rerun.status, rerun.text).to.equal(202);
    const repeated = await finished(client, rerun.body.execution_id);
    expect(repeated).to.deep.include({ status: 'SUCCEEDED', budget: { max_steps: 2 } });
  });

  it('a child run gets what is left of its parent’s budget, and its spend counts against the parent', async () => {
    const { api_key, user_jwt } = await newTenant();
    const client = as(api_key);
    const child = twoSteps('billing.credits_balance');
    const parent = await dispatch(client, {
      agent: 'playbook',
      input: {
        steps: [
          { tool: 'runs.dispatch', input: child },
          { tool: 'billing.credits_balance', input: {} },
        ],
      },
      budget: { max_steps: 2 },
    });
    // The dispatching step is the parent's first: one step is left for the child.
    const [kid] = await eventually(
      async () => {
        const runs = (await client.get(`/v1/runs?parent=${parent}`)).body.runs;
        return runs.length === 1 ? runs : undefined;
      },
      { what: 'the child run' },
    );
    const childApproval = await pendingApproval(client, kid.execution_id);
    expect(childApproval).to.deep.include({ subject: 'budget' });
    expect(childApproval.budget).to.deep.include({ limits: { max_steps: 1 }, exceeded: ['max_steps'] });
    const raised = await resolve(as(user_jwt), childApproval.approval_id, {
      decision: 'APPROVED',
      edits: { max_steps: 2 },
    });
    expect(raised.status, raised.text).to.equal(200);
    expect((await finished(client, kid.execution_id)).status).to.equal('SUCCEEDED');

    // The parent's spend counts its child's two steps beside its own (its next step may have run before
    // the child's first, or wait for a raise after it: either way the sum holds).
    const after = await runUntil(
      client,
      parent,
      (body) => body.status === 'SUCCEEDED' || body.status === 'AWAITING_APPROVAL',
      'the parent to finish or wait for a raise',
    );
    const own = after.steps.filter((step: any) => step.started_at !== null).length;
    expect(after.spent.steps).to.equal(own + 2);
  });

  it('rejected: the run ends FAILED budget_exhausted and the step that wanted more is not charged', async () => {
    const tenant = await newTenant(10);
    const client = as(tenant.api_key);
    const id = await dispatch(client, { ...twoSteps('ontology.search', search), budget: { max_steps: 1 } });
    const approval = await pendingApproval(client, id);
    expect(approval.budget.spent).to.include({ credits: 1, steps: 1 });
    expect(approval.budget.step_credits).to.equal(1);

    const rejected = await resolve(as(tenant.user_jwt), approval.approval_id, { decision: 'REJECTED' });
    expect(rejected.status, rejected.text).to.equal(200);
    const run = await finished(client, id);
    expect(run.status).to.equal('FAILED');
    expect(run.error).to.deep.include({ code: 'budget_exhausted', step: 1 });
    expect(run.steps[1]).to.include({ credits_charged: 0 });
    expect(run.steps[1].status).to.not.equal('SUCCEEDED');
    expect(run.credits_charged).to.equal(1);
    expect(await creditBalance(tenant.tenant_id)).to.equal(9);
    // Who ended the run there is a link of its chain.
    const audit = (await client.get(`/v1/runs/${id}/audit`)).body;
    expect(audit.valid).to.equal(true);
    const link = audit.steps.find((step: any) => step.kind === 'BUDGET');
    expect(link.entry).to.deep.include({ status: 'rejected', edits: null, exceeded: ['max_steps'] });
  });

  it('max_credits: a paid step over it waits; the raise must cover the step (422), then it runs', async () => {
    const tenant = await newTenant(10);
    const client = as(tenant.api_key);
    const id = await dispatch(client, { ...twoSteps('ontology.search', search), budget: { max_credits: 1 } });
    const approval = await pendingApproval(client, id);
    expect(approval.budget).to.deep.include({ exceeded: ['max_credits'], step_credits: 1 });
    expect(approval.budget.spent).to.include({ credits: 1 });
    expect(await creditBalance(tenant.tenant_id)).to.equal(9);

    const reviewer = as(tenant.user_jwt);
    const short = await resolve(reviewer, approval.approval_id, { decision: 'APPROVED', edits: { max_credits: 1 } });
    expect(short.status).to.equal(422);
    expect(short.body.detail[0].loc).to.deep.equal(['body', 'edits', 'max_credits']);
    expect(short.body.detail[0].msg).to.match(/at least 2/);
    const bare = await resolve(reviewer, approval.approval_id, { decision: 'APPROVED' });
    expect(bare.status).to.equal(422);
    expect(bare.body.detail[0].loc).to.deep.equal(['body', 'edits']);

    const approved = await resolve(reviewer, approval.approval_id, { decision: 'APPROVED', edits: { max_credits: 5 } });
    expect(approved.status, approved.text).to.equal(200);
    const run = await finished(client, id);
    expect(run.status).to.equal('SUCCEEDED');
    expect(run.budget).to.deep.equal({ max_credits: 5 });
    expect(run.spent).to.include({ credits: 2, steps: 2 });
    expect(await creditBalance(tenant.tenant_id)).to.equal(8);
  });

  it('an llm run: a paid call over max_credits waits; approved it runs, rejected nothing is charged', async () => {
    const tenant = await newTenant(10);
    const client = as(tenant.api_key);
    const reviewer = as(tenant.user_jwt);
    const llm = {
      agent: 'llm',
      input: { goal: 'search for ada lovelace', approval: 'none' },
      budget: { max_credits: 0 },
    };
    const approved = await dispatch(client, llm);
    const first = await pendingApproval(client, approved);
    expect(first).to.deep.include({ subject: 'budget' });
    expect(first.step).to.deep.include({ step_no: 0, tool: 'ontology.search' });
    const raise = { decision: 'APPROVED', edits: { max_credits: 1 } };
    expect((await resolve(reviewer, first.approval_id, raise)).status).to.equal(200);
    expect((await finished(client, approved)).status).to.equal('SUCCEEDED');
    expect(await creditBalance(tenant.tenant_id)).to.equal(9);

    const rejected = await dispatch(client, llm);
    const second = await pendingApproval(client, rejected);
    expect((await resolve(reviewer, second.approval_id, { decision: 'REJECTED' })).status).to.equal(200);
    const run = await finished(client, rejected);
    expect(run.status).to.equal('FAILED');
    expect(run.error.code).to.equal('budget_exhausted');
    expect(await creditBalance(tenant.tenant_id)).to.equal(9);
  });

  it('a run within its budget never asks; one without a budget shows budget null and its spend', async () => {
    const { api_key } = await newTenant();
    const client = as(api_key);
    const within = await dispatch(client, {
      ...twoSteps('billing.credits_balance'),
      budget: { max_steps: 2, max_credits: 0, max_duration_seconds: 3600 },
    });
    const plain = await dispatch(client, twoSteps('billing.credits_balance'));
    const [a, b] = [await finished(client, within), await finished(client, plain)];
    expect(a.status).to.equal('SUCCEEDED');
    expect(a.approvals).to.deep.equal([]);
    expect(b).to.deep.include({ status: 'SUCCEEDED', budget: null });
    expect(b.spent).to.include({ credits: 0, steps: 2 });
  });

  it('refuses a bad budget with a 422 naming the field, and edits outside a budget approval', async () => {
    const { api_key, user_jwt } = await newTenant();
    const client = as(api_key);
    for (const [budget, field] of [
      [{ max_steps: -1 }, 'max_steps'],
      [{ max_credits: -1 }, 'max_credits'],
      [{ max_credits: 'ten' }, 'max_credits'],
      [{ max_duration_seconds: 1.5 }, 'max_duration_seconds'],
      [{ max_duration_seconds: 100 * 86_400 }, 'max_duration_seconds'],
    ] as const) {
      const refused = await client.post('/v1/runs', { ...twoSteps('billing.credits_balance'), budget });
      expect(refused.status, JSON.stringify(budget)).to.equal(422);
      expect(refused.body.detail[0].loc).to.deep.equal(['body', 'budget', field]);
    }
    const unknown = await client.post('/v1/runs', {
      ...twoSteps('billing.credits_balance'),
      budget: { max_tokens: 1 },
    });
    expect(unknown.status).to.equal(422);

    // A step's own approval takes no edits; a rejection carries none.
    const gated = await dispatch(client, {
      agent: 'playbook',
      input: { steps: [{ tool: 'billing.credits_balance', requires_approval: true }] },
    });
    const approval = await pendingApproval(client, gated);
    const edits = await resolve(as(user_jwt), approval.approval_id, { decision: 'APPROVED', edits: { max_steps: 2 } });
    expect(edits.status).to.equal(422);
    expect(edits.body.detail[0].loc).to.deep.equal(['body', 'edits']);
    const rejectWithEdits = await resolve(as(user_jwt), approval.approval_id, {
      decision: 'REJECTED',
      edits: { max_steps: 2 },
    });
    expect(rejectWithEdits.status).to.equal(422);
    await client.post(`/v1/runs/${gated}/cancel`);
  });

  it('max_duration_seconds: a step asked for past the limit waits, approved after its own approval', async () => {
    const { api_key, user_jwt } = await newTenant();
    const client = as(api_key);
    const id = await dispatch(client, {
      agent: 'playbook',
      input: {
        steps: [{ tool: 'billing.credits_balance' }, { tool: 'billing.credits_balance', requires_approval: true }],
      },
      budget: { max_duration_seconds: 1 },
    });
    const gate = await pendingApproval(client, id);
    expect(gate.subject).to.equal('run_step');
    // The step's own approval is decided only once the run's clock has passed its limit.
    await runUntil(client, id, (run) => run.spent.duration_seconds >= 1, 'a second of the run’s wall time', {
      timeoutMs: 10_000,
    });
    const reviewer = as(user_jwt);
    expect((await resolve(reviewer, gate.approval_id, { decision: 'APPROVED' })).status).to.equal(200);
    const budget = await runUntil(
      client,
      id,
      (run) => run.approvals.some((a: any) => a.subject === 'budget' && a.status === 'pending'),
      'the budget approval',
    );
    const ask = budget.approvals.find((a: any) => a.subject === 'budget');
    expect(ask.budget.exceeded).to.deep.equal(['max_duration_seconds']);
    expect(ask.step.step_no).to.equal(1);
    const raised = await resolve(reviewer, ask.approval_id, {
      decision: 'APPROVED',
      edits: { max_duration_seconds: 3600 },
    });
    expect(raised.status, raised.text).to.equal(200);
    const done = await finished(client, id);
    expect(done.status).to.equal('SUCCEEDED');
    expect(done.budget).to.deep.equal({ max_duration_seconds: 3600 });
  });

  it('a webhook trigger’s run template carries a budget to the runs it dispatches', async () => {
    const { api_key, user_jwt } = await newTenant();
    const client = as(api_key);
    const refused = await client.post('/v1/triggers', {
      slug: `hook-bad-${Date.now()}`,
      run: { ...twoSteps('billing.credits_balance'), budget: { max_steps: -2 } },
    });
    expect(refused.status).to.equal(422);

    const trigger = await newTrigger(api_key, {
      run: { ...twoSteps('billing.credits_balance'), budget: { max_steps: 1 } },
    });
    const shown = (await client.get(`/v1/triggers/${trigger.id}`)).body;
    expect(shown.run.budget).to.deep.equal({ max_steps: 1 });
    const sent = await deliver(trigger.slug, JSON.stringify({ n: 1 }), { secret: trigger.secret });
    expect(sent.status, JSON.stringify(sent.body)).to.equal(202);
    const id = sent.body.execution_id;
    const approval = await pendingApproval(client, id);
    expect(approval).to.deep.include({ subject: 'budget' });
    expect((await client.get(`/v1/runs/${id}`)).body.budget).to.deep.equal({ max_steps: 1 });

    // Cancelled while it waits: the budget approval shows cancelled, and can no longer be decided.
    expect((await client.post(`/v1/runs/${id}/cancel`)).status).to.be.oneOf([200, 202]);
    const run = await finished(client, id);
    expect(run.status).to.equal('CANCELLED');
    expect(run.approvals[0]).to.include({ status: 'cancelled' });
    const late = await resolve(as(user_jwt), approval.approval_id, { decision: 'APPROVED', edits: { max_steps: 5 } });
    expect(late.status).to.equal(409);
  });
});

describe('runs: a run schedule’s template carries a budget (issue 40 item 4)', function () {
  this.timeout(90_000);

  it('stores it, shows it, and its fires dispatch runs with it; a bad one is a 422', async () => {
    const { api_key } = await newTenant();
    const client = as(api_key);
    const run = { ...twoSteps('billing.credits_balance'), budget: { max_steps: 1 } };
    const bad = await client.post('/v1/run-schedules', {
      cron: '@daily',
      paused: true,
      run: { ...run, budget: { max_steps: -1 } },
    });
    expect(bad.status).to.equal(422);
    const created = await client.post('/v1/run-schedules', { cron: '@daily', paused: true, run });
    expect(created.status, created.text).to.equal(201);
    const scheduleId = created.body.id;
    try {
      expect((await client.get(`/v1/run-schedules/${scheduleId}`)).body.run.budget).to.deep.equal({ max_steps: 1 });
      expect((await client.post(`/v1/run-schedules/${scheduleId}/trigger`)).status).to.equal(202);
      const fired = await eventually(
        async () => (await client.get(`/v1/runs?schedule_id=${scheduleId}`)).body.runs[0],
        { what: 'the fire’s run', timeoutMs: 30_000 },
      );
      const approval = await pendingApproval(client, fired.execution_id);
      expect(approval.subject).to.equal('budget');
      await client.post(`/v1/runs/${fired.execution_id}/cancel`);
    } finally {
      await client.delete(`/v1/run-schedules/${scheduleId}`);
    }
  });
});

describe('runs: a budget approval tells the run’s callbacks (issue 40 item 4)', function () {
  this.timeout(90_000);
  let variant: { stack: Stack; stop: () => Promise<void> };
  let receiver: Awaited<ReturnType<typeof startReceiver>>;
  before(async () => {
    variant = await bootStack({ RUN_CALLBACK_ALLOW_PRIVATE: 'true' });
    receiver = await startReceiver();
  });
  after(async () => {
    await receiver?.stop();
    await variant?.stop();
  });

  it('approval.requested, as for a step’s approval', async () => {
    const { api_key } = await newTenant();
    const client = as(api_key, variant.stack.baseUrl);
    const id = await dispatch(client, {
      ...twoSteps('billing.credits_balance'),
      budget: { max_steps: 1 },
      callback: { url: receiver.url('/budget'), events: ['approval.requested'] },
    });
    const approval = await pendingApproval(client, id);
    const told = await eventually(async () => receiver.at('/budget')[0], { what: 'approval.requested' });
    expect(JSON.parse(told.body).data).to.deep.include({
      execution_id: id,
      approval_id: approval.approval_id,
      step_no: 1,
      tool: 'billing.credits_balance',
    });
    expect((await client.post(`/v1/runs/${id}/cancel`)).status).to.equal(200);
  });
});
