import { expect } from 'chai';
import { TAGS_ATTRIBUTE } from '../src/platform/temporal/search-attributes';
import { as } from './helpers/http';
import { finished, pendingApproval, runUntil, succeeded } from './helpers/runs';
import { getStack } from './helpers/stack';
import { creditBalance, newTenant } from './helpers/tenants';
import { startedWorkflow } from './helpers/workflows';

// Issue 26 parts 4 and 5: concurrency keys, tags and reruns, over real HTTP, Postgres and Temporal.

const gated = (extra: Record<string, unknown> = {}) => ({
  agent: 'playbook',
  input: { steps: [{ tool: 'billing.credits_balance', requires_approval: true }] },
  ...extra,
});

const owner = () => getStack().ownerDataSource;

/** The runs of a key as Postgres has them, in dispatch order. */
const runsOfKey = async (workspaceId: string, key: string) =>
  (await owner().query(
    `SELECT id, status, held_start IS NOT NULL AS held FROM run_executions
     WHERE workspace_id = $1 AND concurrency_key = $2 ORDER BY dispatch_seq`,
    [workspaceId, key],
  )) as { id: string; status: string; held: boolean }[];

/** Runs holding a slot: started or about to be (QUEUED without a held start), and not finished. */
const activeOf = (rows: { id: string; status: string; held: boolean }[]) =>
  rows.filter((row) => ['RUNNING', 'AWAITING_APPROVAL'].includes(row.status) || (row.status === 'QUEUED' && !row.held));

const workflowExists = async (executionId: string) => {
  try {
    await getStack().runtime.temporal.client.workflow.getHandle(`run-${executionId}`).describe();
    return true;
  } catch {
    return false;
  }
};

describe('runs: concurrency keys (issue 26 part 4)', function () {
  this.timeout(180_000);

  it('20 concurrent dispatches, one key, limit 2, enqueue: at most 2 active, drained in dispatch order', async () => {
    const { api_key, user_jwt, workspace_id } = await newTenant();
    const client = as(api_key);
    const reviewer = as(user_jwt);
    const key = 'nightly-import';
    const concurrency = { key, limit: 2, policy: 'enqueue' };
    const answers = await Promise.all(
      Array.from({ length: 20 }, () => client.post('/v1/runs', gated({ concurrency }))),
    );
    expect(answers.map((answer) => answer.status)).to.deep.equal(Array(20).fill(202));
    expect(answers.filter((answer) => answer.body.queued_reason === 'concurrency_limit')).to.have.length(18);

    // A sampler reads Postgres all along: at no moment do more than two runs of the key hold a slot.
    let maxActive = 0;
    let sampling = true;
    const sampler = (async () => {
      while (sampling) {
        maxActive = Math.max(maxActive, activeOf(await runsOfKey(workspace_id, key)).length);
        await new Promise((resolve) => setTimeout(resolve, 20));
      }
    })();

    const order = (await runsOfKey(workspace_id, key)).map((row) => row.id);
    const waiting = await client.get(`/v1/runs/${order[5]}`);
    expect(waiting.body).to.include({ status: 'QUEUED', queued_reason: 'concurrency_limit' });
    expect(waiting.body.concurrency).to.deep.equal(concurrency);

    // Cancelling a waiting run frees nothing: still the same two active, and it never gets a workflow.
    const cancelledId = order[19]!;
    const cancelled = await client.post(`/v1/runs/${cancelledId}/cancel`);
    expect(cancelled.body).to.include({ status: 'CANCELLED', queued_reason: null });
    const afterCancel = await runsOfKey(workspace_id, key);
    expect(activeOf(afterCancel).map((row) => row.id)).to.deep.equal(order.slice(0, 2));
    expect(afterCancel.filter((row) => row.held)).to.have.length(17);

    // Round by round, the two oldest unfinished runs are the ones awaiting approval; approve them.
    const started: string[] = [];
    for (let next = 0; next < 19; next += 2) {
      const pair = order.slice(next, Math.min(next + 2, 19));
      // Both of the pair wait before either is approved: once one finishes, the next run rightly starts.
      const approvals = [];
      for (const id of pair) {
        approvals.push(await pendingApproval(client, id));
        started.push(id);
      }
      const later = (await runsOfKey(workspace_id, key)).slice(next + 2, 19);
      expect(
        later.every((row) => row.status === 'QUEUED' && row.held),
        `runs after ${next + 1} wait`,
      ).to.equal(true);
      for (const approval of approvals) {
        const resolved = await reviewer.post(`/v1/approvals/${approval.approval_id}/resolve`, { decision: 'APPROVED' });
        expect(resolved.status).to.equal(200);
      }
      for (const id of pair) await succeeded(client, id);
    }
    sampling = false;
    await sampler;

    expect(started).to.deep.equal(order.slice(0, 19));
    expect(maxActive).to.be.at.most(2);
    const final = await runsOfKey(workspace_id, key);
    expect(final.map((row) => row.status)).to.deep.equal([...Array(19).fill('SUCCEEDED'), 'CANCELLED']);
    expect(final.some((row) => row.held)).to.equal(false);
    expect(await workflowExists(cancelledId)).to.equal(false);
    // No slot leaked: the next run with the key starts at once.
    const next = await client.post('/v1/runs', gated({ concurrency }));
    expect(next.body.queued_reason).to.equal(null);
    await pendingApproval(client, next.body.execution_id);
    await client.post(`/v1/runs/${next.body.execution_id}/cancel`);
  });

  it('reject: a 409 naming the active runs; another key or workspace is not counted', async () => {
    const { api_key } = await newTenant();
    const other = await newTenant();
    const client = as(api_key);
    const concurrency = { key: 'deploy', policy: 'reject' };
    const first = await client.post('/v1/runs', gated({ concurrency }));
    expect(first.status).to.equal(202);
    const refused = await client.post('/v1/runs', gated({ concurrency }));
    expect(refused.status).to.equal(409);
    expect(refused.body.detail).to.include({ error: 'concurrency_limit', concurrency_key: 'deploy' });
    expect(refused.body.detail.execution_ids).to.deep.equal([first.body.execution_id]);
    expect((await client.get('/v1/runs')).body.runs).to.have.length(1);

    const elsewhere = await as(other.api_key).post('/v1/runs', gated({ concurrency }));
    expect(elsewhere.status).to.equal(202);
    const otherKey = await client.post('/v1/runs', gated({ concurrency: { key: 'deploy-2', policy: 'reject' } }));
    expect(otherKey.status).to.equal(202);

    // Once the first finishes, the key is free again.
    await client.post(`/v1/runs/${first.body.execution_id}/cancel`);
    const again = await client.post('/v1/runs', gated({ concurrency }));
    expect(again.status).to.equal(202);
    for (const id of [again.body.execution_id, otherKey.body.execution_id]) await client.post(`/v1/runs/${id}/cancel`);
    await as(other.api_key).post(`/v1/runs/${elsewhere.body.execution_id}/cancel`);
  });

  it('cancel_previous: the oldest active run is cancelled (its approval too) and the new one starts', async () => {
    const { api_key } = await newTenant();
    const client = as(api_key);
    const concurrency = { key: 'sync', limit: 2, policy: 'cancel_previous' };
    const a = (await client.post('/v1/runs', gated({ concurrency }))).body.execution_id;
    await pendingApproval(client, a);
    const b = (await client.post('/v1/runs', gated({ concurrency }))).body.execution_id;
    await pendingApproval(client, b);
    const c = await client.post('/v1/runs', gated({ concurrency }));
    expect(c.status).to.equal(202);
    expect(c.body.queued_reason).to.equal(null);

    const cancelled = await finished(client, a);
    expect(cancelled.status).to.equal('CANCELLED');
    expect(cancelled.approvals.map((approval: any) => approval.status)).to.deep.equal(['cancelled']);
    expect(await getStack().runtime.temporal.client.workflow.getHandle(`run-${a}`).result()).to.deep.equal({
      status: 'CANCELLED',
    });
    expect((await client.get(`/v1/runs/${b}`)).body.status).to.equal('AWAITING_APPROVAL');
    await pendingApproval(client, c.body.execution_id);
    for (const id of [b, c.body.execution_id]) await client.post(`/v1/runs/${id}/cancel`);
  });

  it('refuses a bad concurrency block with a 422', async () => {
    const { api_key } = await newTenant();
    for (const concurrency of [
      { key: '', policy: 'reject' },
      { key: 'k', limit: 0 },
      { key: 'k', policy: 'sometimes' },
      { key: 'x'.repeat(201) },
      { key: 'k', extra: 1 },
    ]) {
      const refused = await as(api_key).post('/v1/runs', gated({ concurrency }));
      expect(refused.status, JSON.stringify(concurrency)).to.equal(422);
    }
  });
});

describe('runs: tags (issue 26 part 5)', function () {
  this.timeout(60_000);

  it('stores tags, filters the list by every tag given, and sets WeftTags in Temporal', async () => {
    const { api_key } = await newTenant();
    const client = as(api_key);
    const quick = (tags?: string[]) => ({
      agent: 'playbook',
      input: { steps: [{ tool: 'billing.credits_balance' }] },
      ...(tags ? { tags } : {}),
    });
    const both = (await client.post('/v1/runs', quick(['nightly', 'team:data', 'nightly']))).body.execution_id;
    const one = (await client.post('/v1/runs', quick(['nightly']))).body.execution_id;
    const none = (await client.post('/v1/runs', quick())).body.execution_id;
    for (const id of [both, one, none]) await succeeded(client, id);

    expect((await client.get(`/v1/runs/${both}`)).body.tags).to.deep.equal(['nightly', 'team:data']);
    expect((await client.get(`/v1/runs/${none}`)).body.tags).to.deep.equal([]);
    const ids = async (query: string) =>
      (await client.get(`/v1/runs?${query}`)).body.runs.map((r: any) => r.execution_id);
    expect(await ids('tag=nightly')).to.have.members([both, one]);
    expect(await ids('tag=nightly&tag=team:data')).to.deep.equal([both]);
    expect(await ids('tag=absent')).to.deep.equal([]);
    expect((await client.get('/v1/runs?tag=bad%20tag')).status).to.equal(422);

    const described = await startedWorkflow(`run-${both}`);
    expect(described.typedSearchAttributes.get(TAGS_ATTRIBUTE)).to.deep.equal(['nightly', 'team:data']);

    for (const tags of [['has space'], Array(21).fill('t'), ['x'.repeat(65)], ['-lead']]) {
      expect((await client.post('/v1/runs', quick(tags))).status, JSON.stringify(tags)).to.equal(422);
    }
  });
});

describe('runs: reruns from a step (issue 26 part 5)', function () {
  this.timeout(90_000);

  it('reuses the outputs before from_step without calling or charging, and links the chains', async () => {
    const { api_key, tenant_id } = await newTenant(10);
    const client = as(api_key);
    const earlier = await client.post('/v1/runs', {
      agent: 'playbook',
      input: {
        steps: [{ tool: 'ontology.search', input: { query: 'ada lovelace' } }, { tool: 'billing.credits_balance' }],
      },
      tags: ['rerunnable'],
    });
    const earlierRun = await succeeded(client, earlier.body.execution_id);
    expect(earlierRun.credits_charged).to.equal(1);
    const balance = await creditBalance(tenant_id);
    const earlierAudit = (await client.get(`/v1/runs/${earlierRun.execution_id}/audit`)).body;

    const rerun = await client.post(`/v1/runs/${earlierRun.execution_id}/rerun`, { from_step: 1 });
    expect(rerun.status).to.equal(202);
    const run = await succeeded(client, rerun.body.execution_id);
    expect(run.rerun_of).to.equal(earlierRun.execution_id);
    expect(run.tags).to.deep.equal(['rerunnable']);
    expect(run.steps[0]).to.include({
      status: 'SUCCEEDED',
      credits_charged: 0,
      reused_from_step_id: earlierRun.steps[0].step_id,
    });
    expect(run.steps[0].output).to.deep.equal(earlierRun.steps[0].output);
    expect(run.steps[1]).to.include({ status: 'SUCCEEDED', reused_from_step_id: null });
    expect(run.credits_charged).to.equal(0);
    expect(await creditBalance(tenant_id)).to.equal(balance);

    const audit = (await client.get(`/v1/runs/${run.execution_id}/audit`)).body;
    expect(audit.valid).to.equal(true);
    expect(audit.steps.map((link: any) => link.kind)).to.deep.equal(['RERUN', 'TOOL', 'TOOL']);
    expect(audit.steps[0].entry).to.include({
      rerun_of: earlierRun.execution_id,
      rerun_of_head_hash: earlierAudit.head_hash,
      from_step: 1,
    });
    expect(audit.lineage).to.deep.equal({
      rerun_of: earlierRun.execution_id,
      head_hash: earlierAudit.head_hash,
      found: true,
      earlier_valid: true,
    });

    // The whole run again, with an overridden input: the charged step runs (and is charged) anew.
    const again = await client.post(`/v1/runs/${earlierRun.execution_id}/rerun`, {
      from_step: 0,
      input_overrides: { '0': { query: 'charles babbage' } },
    });
    const whole = await succeeded(client, again.body.execution_id);
    expect(whole.steps[0]).to.include({ reused_from_step_id: null, credits_charged: 1 });
    expect(whole.steps[0].input).to.deep.equal({ query: 'charles babbage' });
    expect(await creditBalance(tenant_id)).to.equal(balance - 1);
  });

  it('refuses what it cannot repeat: 422 for bad overrides or steps, 409 unfinished, 404 elsewhere', async () => {
    const { api_key, user_jwt } = await newTenant(10);
    const stranger = await newTenant();
    const client = as(api_key);
    const done = await client.post('/v1/runs', {
      agent: 'playbook',
      input: { steps: [{ tool: 'billing.credits_balance' }, { tool: 'ontology.search', input: { query: 'x' } }] },
    });
    const id = done.body.execution_id;
    await succeeded(client, id);

    const badInput = await client.post(`/v1/runs/${id}/rerun`, {
      from_step: 1,
      input_overrides: { '1': { query: 42 } },
    });
    expect(badInput.status).to.equal(422);
    expect(badInput.body.detail[0].loc).to.deep.equal(['body', 'input_overrides', '1', 'input', 'query']);
    const reusedOverride = await client.post(`/v1/runs/${id}/rerun`, { from_step: 1, input_overrides: { '0': {} } });
    expect(reusedOverride.status).to.equal(422);
    expect(reusedOverride.body.detail[0].loc).to.deep.equal(['body', 'input_overrides', '0']);
    expect((await client.post(`/v1/runs/${id}/rerun`, { from_step: 2 })).status).to.equal(422);
    expect((await client.post(`/v1/runs/${id}/rerun`, { from_step: -1 })).status).to.equal(422);
    expect((await client.post(`/v1/runs/${id}/rerun`, { surprise: true })).status).to.equal(422);

    expect((await as(stranger.api_key).post(`/v1/runs/${id}/rerun`, {})).status).to.equal(404);
    const reader = (await as(user_jwt).post('/v1/auth/me/api-keys', { name: 'r', scopes: ['runs:read'] })).body.token;
    expect((await as(reader).post(`/v1/runs/${id}/rerun`, {})).status).to.equal(403);

    const waiting = (await client.post('/v1/runs', gated())).body.execution_id;
    await pendingApproval(client, waiting);
    const unfinished = await client.post(`/v1/runs/${waiting}/rerun`, {});
    expect(unfinished.status).to.equal(409);
    expect(unfinished.body.detail.error).to.equal('run_unfinished');
    await client.post(`/v1/runs/${waiting}/cancel`);

    // A failed step cannot be reused; by default the rerun starts from it.
    const failing = await client.post('/v1/runs', gated());
    await pendingApproval(client, failing.body.execution_id);
    await client.post(`/v1/runs/${failing.body.execution_id}/cancel`);
    const fromCancelled = await client.post(`/v1/runs/${failing.body.execution_id}/rerun`, { from_step: 1 });
    expect(fromCancelled.status).to.equal(422);
    const retried = await client.post(`/v1/runs/${failing.body.execution_id}/rerun`, {});
    expect(retried.status).to.equal(202);
    const retriedRun = await runUntil(
      client,
      retried.body.execution_id,
      (run) => run.status === 'AWAITING_APPROVAL',
      'wait',
    );
    expect(retriedRun.steps[0].reused_from_step_id).to.equal(null);
    await client.post(`/v1/runs/${retried.body.execution_id}/cancel`);
  });

  it('re-runs an llm run: the model is asked again from from_step, with the reused steps as its history', async () => {
    const { api_key, tenant_id } = await newTenant(10);
    const client = as(api_key);
    const earlier = await client.post('/v1/runs', { agent: 'llm', input: { goal: 'check my credit balance' } });
    const earlierRun = await succeeded(client, earlier.body.execution_id);
    expect(earlierRun.output.answer).to.equal('billing.credits_balance answered: {"balance":10,"locked":false}');
    // The balance moves, so a balance step that ran again would answer 9, and a reused one still 10.
    const spend = await client.post('/v1/runs', {
      agent: 'playbook',
      input: { steps: [{ tool: 'ontology.search', input: { query: 'ada' } }] },
    });
    await succeeded(client, spend.body.execution_id);
    expect(await creditBalance(tenant_id)).to.equal(9);

    // From step 1: step 0 is reused as the model's history, and the model answers from it.
    const reusing = await client.post(`/v1/runs/${earlierRun.execution_id}/rerun`, { from_step: 1 });
    expect(reusing.status).to.equal(202);
    const reused = await succeeded(client, reusing.body.execution_id);
    expect(reused).to.include({ agent: 'llm', rerun_of: earlierRun.execution_id, credits_charged: 0 });
    expect(reused.steps).to.have.length(1);
    expect(reused.steps[0]).to.include({ status: 'SUCCEEDED', reused_from_step_id: earlierRun.steps[0].step_id });
    expect(reused.output.answer).to.equal(earlierRun.output.answer);
    const audit = (await client.get(`/v1/runs/${reused.execution_id}/audit`)).body;
    expect(audit.valid).to.equal(true);
    expect(audit.steps.map((link: any) => link.kind)).to.deep.equal(['RERUN', 'TOOL']);
    expect(audit.lineage).to.include({ rerun_of: earlierRun.execution_id, found: true, earlier_valid: true });

    // From step 0 (the default when every step succeeded): the model chooses the tool again, which runs anew.
    const again = await client.post(`/v1/runs/${earlierRun.execution_id}/rerun`, {});
    const fresh = await succeeded(client, again.body.execution_id);
    expect(fresh.steps.map((step: any) => [step.tool, step.reused_from_step_id])).to.deep.equal([
      ['billing.credits_balance', null],
    ]);
    expect(fresh.output.answer).to.equal('billing.credits_balance answered: {"balance":9,"locked":false}');

    // The model chooses the later steps, so there are no inputs to override; nor a step past the last one.
    const override = await client.post(`/v1/runs/${earlierRun.execution_id}/rerun`, {
      from_step: 0,
      input_overrides: { '0': {} },
    });
    expect(override.status).to.equal(422);
    expect(override.body.detail[0]).to.include({ type: 'step_chosen' });
    expect(override.body.detail[0].loc).to.deep.equal(['body', 'input_overrides', '0']);
    const past = await client.post(`/v1/runs/${earlierRun.execution_id}/rerun`, { from_step: 2 });
    expect(past.status).to.equal(422);
    expect(past.body.detail[0].loc).to.deep.equal(['body', 'from_step']);
  });
});
