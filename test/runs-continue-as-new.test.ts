import { expect } from 'chai';
import { RUN_STATUS_ATTRIBUTE } from '../src/platform/temporal/search-attributes';
import { eventually } from './helpers/eventually';
import { as } from './helpers/http';
import { pendingApproval } from './helpers/runs';
import type { Stack } from './helpers/stack';
import { bootStack } from './helpers/stack';
import { newTenant } from './helpers/tenants';

// A re-check every second and a new run after two of them: a wait of a few seconds spans several runs.
const RECHECKS_PER_RUN = 2;

describe('runs: a long approval wait continues as new (RUN_APPROVAL_RECHECKS_PER_RUN=2)', function () {
  this.timeout(90_000);
  let variant: { stack: Stack; stop: () => Promise<void> };
  before(async function () {
    this.timeout(120_000);
    variant = await bootStack({
      RUN_APPROVAL_RECHECK_SECONDS: '1',
      RUN_APPROVAL_RECHECKS_PER_RUN: String(RECHECKS_PER_RUN),
    });
  });
  after(() => variant?.stop());

  const workflow = () => variant.stack.runtime.temporal.client.workflow;

  /** Waits until the run `run-<id>` has started `count` runs; answers their run ids, oldest first. */
  async function runsOf(id: string, count: number): Promise<string[]> {
    const seen: string[] = [];
    await eventually(
      async () => {
        const { runId } = await workflow().getHandle(`run-${id}`).describe();
        if (!seen.includes(runId)) seen.push(runId);
        return seen.length >= count;
      },
      { what: `${count} runs of the workflow`, timeoutMs: 45_000, intervalMs: 100 },
    );
    return seen;
  }

  /** Each finished run of the chain continued as new with a bounded history of at most two timers. */
  async function expectBounded(id: string, runIds: string[]) {
    for (const runId of runIds) {
      const handle = workflow().getHandle(`run-${id}`, runId);
      expect((await handle.describe()).status.name).to.equal('CONTINUED_AS_NEW');
      const events = (await handle.fetchHistory()).events ?? [];
      expect(events.filter((event) => event.timerStartedEventAttributes)).to.have.length.at.most(RECHECKS_PER_RUN);
      expect(events.length).to.be.at.most(60);
      expect(events.at(-1)?.workflowExecutionContinuedAsNewEventAttributes).to.not.equal(undefined);
    }
  }

  it('a playbook keeps its history small across runs and resumes on resolve', async () => {
    const { api_key, user_jwt } = await newTenant();
    const client = as(api_key, variant.stack.baseUrl);
    const dispatched = await client.post('/v1/runs', {
      agent: 'playbook',
      input: {
        steps: [{ tool: 'billing.credits_balance', requires_approval: true }, { tool: 'billing.credits_balance' }],
      },
    });
    expect(dispatched.status).to.equal(202);
    const id = dispatched.body.execution_id;
    const approval = await pendingApproval(client, id);
    const runIds = await runsOf(id, 3);

    // The continued run still shows the wait, and the row is unchanged: one approval, still pending.
    const current = await workflow().getHandle(`run-${id}`).describe();
    expect(current.typedSearchAttributes.get(RUN_STATUS_ATTRIBUTE)).to.equal('AWAITING_APPROVAL');
    const waiting = (await client.get(`/v1/runs/${id}`)).body;
    expect(waiting.status).to.equal('AWAITING_APPROVAL');
    expect(waiting.approvals.map((a: any) => a.status)).to.deep.equal(['pending']);

    const resolved = await as(user_jwt, variant.stack.baseUrl).post(`/v1/approvals/${approval.approval_id}/resolve`, {
      decision: 'APPROVED',
    });
    expect(resolved.status).to.equal(200);
    expect(await workflow().getHandle(`run-${id}`).result()).to.deep.equal({ status: 'SUCCEEDED' });
    const run = (await client.get(`/v1/runs/${id}`)).body;
    expect(run.steps.map((step: any) => step.status)).to.deep.equal(['SUCCEEDED', 'SUCCEEDED']);
    await expectBounded(id, runIds.slice(0, 2));
    const final = await workflow().getHandle(`run-${id}`).describe();
    expect(final.typedSearchAttributes.get(RUN_STATUS_ATTRIBUTE)).to.equal('SUCCEEDED');
  });

  it('an llm run picks up its wait after continuing as new, runs the step and answers', async () => {
    const { api_key, user_jwt } = await newTenant(3);
    const client = as(api_key, variant.stack.baseUrl);
    const dispatched = await client.post('/v1/runs', {
      agent: 'llm',
      input: { goal: 'what is my balance', approval: 'all' },
    });
    const id = dispatched.body.execution_id;
    const approval = await pendingApproval(client, id);
    const runIds = await runsOf(id, 2);
    await as(user_jwt, variant.stack.baseUrl).post(`/v1/approvals/${approval.approval_id}/resolve`, {
      decision: 'APPROVED',
    });
    expect(await workflow().getHandle(`run-${id}`).result()).to.deep.equal({ status: 'SUCCEEDED' });
    const run = (await client.get(`/v1/runs/${id}`)).body;
    expect(run.steps.map((step: any) => [step.tool, step.status])).to.deep.equal([
      ['billing.credits_balance', 'SUCCEEDED'],
    ]);
    expect(run.output.answer).to.equal('billing.credits_balance answered: {"balance":3,"locked":false}');
    await expectBounded(id, runIds.slice(0, 1));
  });

  it('a deadline survives continuing as new: it expires at the instant the row holds (issue 32)', async () => {
    const { api_key, user_jwt } = await newTenant(3);
    const client = as(api_key, variant.stack.baseUrl);
    const rules = {
      rules: [
        {
          match: { tool: 'billing.credits_balance' },
          action: 'require_approval',
          deadline: { after_seconds: 8, on_expiry: 'reject' },
        },
      ],
      default_action: 'allow',
    };
    expect((await as(user_jwt, variant.stack.baseUrl).put('/v1/approval-policies', rules)).status).to.equal(200);
    const dispatched = await client.post('/v1/runs', {
      agent: 'playbook',
      input: { steps: [{ tool: 'billing.credits_balance' }] },
    });
    const id = dispatched.body.execution_id;
    const approval = await pendingApproval(client, id);
    // Re-checks every second, two per run: the 8 s wait spans several runs, each re-reading expires_at.
    const runIds = await runsOf(id, 2);
    expect(await workflow().getHandle(`run-${id}`).result()).to.deep.equal({ status: 'FAILED' });
    const run = (await client.get(`/v1/runs/${id}`)).body;
    expect(run.error.code).to.equal('approval_expired');
    expect(run.approvals[0]).to.deep.include({ status: 'rejected', expired: true, expires_at: approval.expires_at });
    const late = Date.parse(run.approvals[0].resolved_at) - Date.parse(approval.expires_at);
    expect(late).to.be.within(0, 3000);
    await expectBounded(id, runIds.slice(0, 1));
  });
});
