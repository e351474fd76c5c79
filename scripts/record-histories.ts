// Records the workflow histories that test/workflow-replay.test.ts replays: `npm run histories:record`
// (a mocha file, so that it reuses the suite's stack and helpers; not part of `npm test`).
// Re-record after an intentional workflow change, and review the diff of test/histories/.
import { mkdirSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { expect } from 'chai';
import { startReceiver } from '../test/helpers/callback-receiver';
import { eventually } from '../test/helpers/eventually';
import type { FakeOpenAI } from '../test/helpers/fake-openai';
import { startFakeOpenAI } from '../test/helpers/fake-openai';
import { HISTORIES_DIR, HISTORY_ENCRYPTION_KEY, historyToFixture } from '../test/helpers/histories';
import { as } from '../test/helpers/http';
import { runUntil } from '../test/helpers/runs';
import type { Stack } from '../test/helpers/stack';
import { bootStack } from '../test/helpers/stack';
import { newTenant } from '../test/helpers/tenants';

describe('record workflow histories into test/histories', function () {
  this.timeout(60_000);
  let variant: { stack: Stack; stop: () => Promise<void> };
  before(async function () {
    this.timeout(120_000);
    variant = await bootStack({
      WEFT_ENCRYPTION_KEY: HISTORY_ENCRYPTION_KEY,
      // The run callback's receiver is on loopback; its retries are quick.
      RUN_CALLBACK_ALLOW_PRIVATE: 'true',
      RUN_CALLBACK_RETRY_BASE_SECONDS: '0.2',
    });
    mkdirSync(HISTORIES_DIR, { recursive: true });
  });
  after(() => variant?.stop());

  const client = (apiKey: string) => as(apiKey, variant.stack.baseUrl);

  /** Waits for the workflow (run `runId`, else its last) to close, then writes its history as `<name>.json`. */
  async function record(name: string, workflowId: string, stack: Stack = variant.stack, runId?: string) {
    const handle = stack.runtime.temporal.client.workflow.getHandle(workflowId, runId);
    await handle.result().catch(() => undefined);
    const history = await handle.fetchHistory();
    writeFileSync(path.join(HISTORIES_DIR, `${name}.json`), historyToFixture(history));
  }

  async function approvalRun(name: string, decision: 'APPROVED' | 'REJECTED') {
    const { api_key, user_jwt } = await newTenant();
    const c = client(api_key);
    const dispatched = await c.post('/v1/runs', {
      agent: 'playbook',
      input: {
        steps: [
          { tool: 'billing.credits_balance' },
          { tool: 'agent.start_session', input: { name: 'needs a human' }, requires_approval: true },
        ],
      },
    });
    expect(dispatched.status, dispatched.text).to.equal(202);
    const id = dispatched.body.execution_id;
    const waiting = await runUntil(c, id, (run) => run.approvals.some((a: any) => a.status === 'pending'), 'approval');
    const resolved = await client(user_jwt).post(`/v1/approvals/${waiting.approvals[0].approval_id}/resolve`, {
      decision,
    });
    expect(resolved.status, resolved.text).to.equal(200);
    const run = await runUntil(c, id, (body) => ['SUCCEEDED', 'FAILED'].includes(body.status), 'the run to finish');
    expect(run.status).to.equal(decision === 'APPROVED' ? 'SUCCEEDED' : 'FAILED');
    await record(name, `run-${id}`);
  }

  /** Issue 40 item 4: a 2-step run with `max_steps: 1`, whose budget approval before step 1 is decided. */
  async function budgetRun(name: string, decision: 'APPROVED' | 'REJECTED') {
    const { api_key, user_jwt } = await newTenant();
    const c = client(api_key);
    const dispatched = await c.post('/v1/runs', {
      agent: 'playbook',
      input: { steps: [{ tool: 'billing.credits_balance' }, { tool: 'billing.credits_balance' }] },
      budget: { max_steps: 1 },
    });
    expect(dispatched.status, dispatched.text).to.equal(202);
    const id = dispatched.body.execution_id;
    const waiting = await runUntil(c, id, (run) => run.approvals.some((a: any) => a.status === 'pending'), 'approval');
    const resolved = await client(user_jwt).post(`/v1/approvals/${waiting.approvals[0].approval_id}/resolve`, {
      decision,
      ...(decision === 'APPROVED' ? { edits: { max_steps: 2 } } : {}),
    });
    expect(resolved.status, resolved.text).to.equal(200);
    const run = await runUntil(c, id, (body) => ['SUCCEEDED', 'FAILED'].includes(body.status), 'the run to finish');
    expect(run.status).to.equal(decision === 'APPROVED' ? 'SUCCEEDED' : 'FAILED');
    await record(name, `run-${id}`);
  }

  it('issue 40: a playbook run whose budget approval is APPROVED with a raised budget', () =>
    budgetRun('run-playbook-budget-approved', 'APPROVED'));

  it('issue 40: a playbook run whose budget approval is REJECTED', () =>
    budgetRun('run-playbook-budget-rejected', 'REJECTED'));

  it('a run callback delivered after a 500 (issue 26)', async () => {
    const receiver = await startReceiver();
    try {
      receiver.answer('/history', { status: 500 }, { status: 200 });
      const { api_key } = await newTenant();
      const c = client(api_key);
      const dispatched = await c.post('/v1/runs', {
        agent: 'playbook',
        input: { steps: [{ tool: 'billing.credits_balance' }] },
        callback: { url: receiver.url('/history') },
      });
      expect(dispatched.status, dispatched.text).to.equal(202);
      const id = dispatched.body.execution_id;
      const delivery = await eventually(
        async () => {
          const [row] = (await c.get(`/v1/runs/${id}/callbacks`)).body.deliveries;
          return row?.status === 'delivered' ? row : undefined;
        },
        { what: 'the callback delivered' },
      );
      expect(delivery.attempts).to.have.length(2);
      await record('run-callback-retried', `run-callback-${delivery.delivery_id}-0`);
    } finally {
      await receiver.stop();
    }
  });

  it('a playbook run whose approval is APPROVED', () => approvalRun('run-playbook-approved', 'APPROVED'));

  it('a playbook run whose approval is REJECTED', () => approvalRun('run-playbook-rejected', 'REJECTED'));

  it('an llm run on the local planner', async () => {
    const { api_key } = await newTenant(7);
    const c = client(api_key);
    const dispatched = await c.post('/v1/runs', { agent: 'llm', input: { goal: 'check my credit balance' } });
    expect(dispatched.status, dispatched.text).to.equal(202);
    const id = dispatched.body.execution_id;
    const run = await runUntil(c, id, (body) => ['SUCCEEDED', 'FAILED'].includes(body.status), 'the run to finish');
    expect(run.status).to.equal('SUCCEEDED');
    await record('run-llm-local', `run-${id}`);
  });

  it('issue 32: an llm run whose tool the approval rules block', async () => {
    const { api_key, user_jwt } = await newTenant(7);
    const rules = { rules: [{ match: { tool: 'billing.credits_balance' }, action: 'block' }], default_action: 'allow' };
    expect((await client(user_jwt).put('/v1/approval-policies', rules)).status).to.equal(200);
    const c = client(api_key);
    const dispatched = await c.post('/v1/runs', { agent: 'llm', input: { goal: 'check my credit balance' } });
    const id = dispatched.body.execution_id;
    const run = await runUntil(c, id, (body) => ['SUCCEEDED', 'FAILED'].includes(body.status), 'the run to finish');
    expect(run.steps[0].error.code).to.equal('blocked_by_policy');
    await record('run-llm-blocked-by-rules', `run-${id}`);
  });

  it('issue 32: a playbook step the rules send to approval, approved with an edited input', async () => {
    const { api_key, user_jwt } = await newTenant(7);
    await gateStartSession(user_jwt);
    const c = client(api_key);
    const dispatched = await c.post('/v1/runs', {
      agent: 'playbook',
      input: { steps: [{ tool: 'agent.start_session', input: { name: 'as asked' } }] },
    });
    const id = dispatched.body.execution_id;
    const waiting = await runUntil(c, id, (run) => run.approvals.some((a: any) => a.status === 'pending'), 'approval');
    const resolved = await client(user_jwt).post(`/v1/approvals/${waiting.approvals[0].approval_id}/resolve`, {
      decision: 'APPROVED',
      input: { name: 'as edited' },
    });
    expect(resolved.status, resolved.text).to.equal(200);
    const run = await runUntil(c, id, (body) => ['SUCCEEDED', 'FAILED'].includes(body.status), 'the run to finish');
    expect(run.status).to.equal('SUCCEEDED');
    await record('run-playbook-rules-edited', `run-${id}`);
  });

  it('issue 27: a playbook of three steps whose activities begin, decide and finish the run', async () => {
    const { api_key } = await newTenant(7);
    const c = client(api_key);
    const dispatched = await c.post('/v1/runs', {
      agent: 'playbook',
      input: {
        steps: [
          { tool: 'billing.credits_balance' },
          { tool: 'billing.credits_balance' },
          { tool: 'billing.credits_balance' },
        ],
      },
    });
    const run = await finish(api_key, dispatched.body.execution_id);
    expect(run.status).to.equal('SUCCEEDED');
    await record('run-playbook-fused', `run-${run.execution_id}`);
  });

  it('issue 40: a parent whose step starts a child, cancelled while both wait, cancels the child', async () => {
    const { api_key } = await newTenant();
    const c = client(api_key);
    const gated = { tool: 'billing.credits_balance', requires_approval: true };
    const child = { agent: 'playbook', input: { steps: [gated] } };
    const dispatched = await c.post('/v1/runs', {
      agent: 'playbook',
      input: { steps: [{ tool: 'runs.dispatch', input: child }, gated] },
    });
    expect(dispatched.status, dispatched.text).to.equal(202);
    const parentId = dispatched.body.execution_id;
    const waiting = (id: string) => runUntil(c, id, (run) => run.status === 'AWAITING_APPROVAL', 'approval');
    const childId = (await waiting(parentId)).steps[0].output.execution_id;
    await waiting(childId);
    expect((await c.post(`/v1/runs/${parentId}/cancel`)).status).to.equal(200);
    await record('run-playbook-parent-cancelled', `run-${parentId}`);
    await record('run-playbook-child-cancelled', `run-${childId}`);
  });

  it('issue 27: a fused step the rules send to approval comes back unrun, waits, then finishes the run', async () => {
    const { api_key, user_jwt } = await newTenant(7);
    await gateStartSession(user_jwt);
    const c = client(api_key);
    const dispatched = await c.post('/v1/runs', {
      agent: 'playbook',
      input: {
        steps: [{ tool: 'billing.credits_balance' }, { tool: 'agent.start_session', input: { name: 'gated' } }],
      },
    });
    const id = dispatched.body.execution_id;
    const waiting = await runUntil(c, id, (run) => run.approvals.some((a: any) => a.status === 'pending'), 'approval');
    const resolved = await client(user_jwt).post(`/v1/approvals/${waiting.approvals[0].approval_id}/resolve`, {
      decision: 'APPROVED',
    });
    expect(resolved.status, resolved.text).to.equal(200);
    expect((await finish(api_key, id)).status).to.equal('SUCCEEDED');
    await record('run-playbook-fused-approved', `run-${id}`);
  });

  it('issue 32: an llm run whose step a reviewer answers with RESPOND', async () => {
    const { api_key, user_jwt } = await newTenant(7);
    const c = client(api_key);
    const dispatched = await c.post('/v1/runs', {
      agent: 'llm',
      input: { goal: 'check my credit balance', approval: 'all' },
    });
    const id = dispatched.body.execution_id;
    const waiting = await runUntil(c, id, (run) => run.approvals.some((a: any) => a.status === 'pending'), 'approval');
    const resolved = await client(user_jwt).post(`/v1/approvals/${waiting.approvals[0].approval_id}/resolve`, {
      decision: 'RESPOND',
      message: 'It is 7 credits',
    });
    expect(resolved.status, resolved.text).to.equal(200);
    const run = await runUntil(c, id, (body) => ['SUCCEEDED', 'FAILED'].includes(body.status), 'the run to finish');
    expect(run.status).to.equal('SUCCEEDED');
    await record('run-llm-responded', `run-${id}`);
  });

  /** Puts rules that send `agent.start_session` to approval, `extra` on its rule. */
  async function gateStartSession(userJwt: string, extra: Record<string, unknown> = {}) {
    const rules = {
      rules: [{ match: { tool: 'agent.start_session' }, action: 'require_approval', ...extra }],
      default_action: 'allow',
    };
    const put = await client(userJwt).put('/v1/approval-policies', rules);
    expect(put.status, put.text).to.equal(200);
  }

  /** Puts rules that gate `agent.start_session` with `extra`, dispatches it and answers the pending approval. */
  async function gatedByRules(apiKey: string, userJwt: string, extra: Record<string, unknown>) {
    await gateStartSession(userJwt, extra);
    const c = client(apiKey);
    const dispatched = await c.post('/v1/runs', {
      agent: 'playbook',
      input: { steps: [{ tool: 'agent.start_session', input: { name: 'gated by the rules' } }] },
    });
    const id = dispatched.body.execution_id;
    const waiting = await runUntil(c, id, (run) => run.approvals.some((a: any) => a.status === 'pending'), 'approval');
    return { id, approvalId: waiting.approvals[0].approval_id as string };
  }

  const finish = (apiKey: string, id: string) =>
    runUntil(client(apiKey), id, (body) => ['SUCCEEDED', 'FAILED'].includes(body.status), 'the run to finish');

  it('issue 32 deadlines: a playbook step whose approval nobody decides, rejected by its deadline', async () => {
    const { api_key, user_jwt } = await newTenant(7);
    const { id } = await gatedByRules(api_key, user_jwt, { deadline: { after_seconds: 2, on_expiry: 'reject' } });
    const run = await finish(api_key, id);
    expect(run.error.code).to.equal('approval_expired');
    await record('run-playbook-deadline-rejected', `run-${id}`);
  });

  it('issue 32 deadlines: an approval escalated by its deadline, then approved by the new approver', async () => {
    const { api_key, user_jwt, user_id, workspace_id } = await newTenant(7);
    const colleague = await variant.stack.provisioning.bootstrap({ workspaceId: workspace_id });
    const { id, approvalId } = await gatedByRules(api_key, user_jwt, {
      approvers: { min: 1, from: [user_id] },
      deadline: { after_seconds: 2, on_expiry: 'escalate', escalate_to: { min: 1, from: [colleague.user_id] } },
    });
    await runUntil(client(api_key), id, (run) => run.approvals[0]?.escalations === 1, 'the escalation');
    const resolved = await client(colleague.user_jwt).post(`/v1/approvals/${approvalId}/resolve`, {
      decision: 'APPROVED',
    });
    expect(resolved.status, resolved.text).to.equal(200);
    expect((await finish(api_key, id)).status).to.equal('SUCCEEDED');
    await record('run-playbook-deadline-escalated', `run-${id}`);
  });

  it('issue 32 deadlines: a 2-of-3 quorum approves a playbook step', async () => {
    const { api_key, user_jwt, workspace_id } = await newTenant(7);
    const bootstrap = () => variant.stack.provisioning.bootstrap({ workspaceId: workspace_id });
    const people = [await bootstrap(), await bootstrap(), await bootstrap()];
    const { id, approvalId } = await gatedByRules(api_key, user_jwt, {
      approvers: { min: 2, from: people.map((person) => person.user_id) },
    });
    for (const person of people.slice(0, 2)) {
      const voted = await client(person.user_jwt).post(`/v1/approvals/${approvalId}/resolve`, { decision: 'APPROVED' });
      expect(voted.status, voted.text).to.equal(200);
    }
    expect((await finish(api_key, id)).status).to.equal('SUCCEEDED');
    await record('run-playbook-quorum-approved', `run-${id}`);
  });

  it('a prompt on the local model, intent both', async () => {
    const { api_key } = await newTenant(10);
    const response = await client(api_key).post('/v1/ontology/prompt', {
      prompt: 'Grace Hopper works at Remington Rand. Who is Grace Hopper?',
    });
    expect(response.status, response.text).to.equal(200);
    expect(response.body.intent).to.equal('both');
    await record('prompt-both-local', `prompt-${response.body.correlation_id}`);
  });

  it('two fires of a cancel_other run schedule: the first waits for its run, is cancelled, cancels it', async () => {
    const { api_key } = await newTenant(10);
    const c = client(api_key);
    const created = await c.post('/v1/run-schedules', {
      cron: '0 3 1 1 *',
      paused: true,
      overlap: 'cancel_other',
      run: {
        agent: 'playbook',
        input: { steps: [{ tool: 'billing.credits_balance', input: {}, requires_approval: true }] },
      },
    });
    expect(created.status, created.text).to.equal(201);
    const id = created.body.id;
    const fires = async (count: number) =>
      eventually(
        async () => {
          const read = await c.get(`/v1/run-schedules/${id}`);
          const runs = (await c.get(`/v1/runs?schedule_id=${id}`)).body.runs;
          return read.body.temporal.recent_fires.length === count && runs.length === count
            ? read.body.temporal.recent_fires
            : undefined;
        },
        { what: `${count} fires with their runs`, timeoutMs: 30_000 },
      );
    await c.post(`/v1/run-schedules/${id}/trigger`);
    const [first] = await fires(1);
    const runs = (await c.get(`/v1/runs?schedule_id=${id}`)).body.runs;
    await runUntil(c, runs[0].execution_id, (run) => run.status === 'AWAITING_APPROVAL', 'the first run waits');
    await c.post(`/v1/run-schedules/${id}/trigger`);
    await runUntil(c, runs[0].execution_id, (run) => run.status === 'CANCELLED', 'the first run cancelled');
    await record('run-schedule-fire-cancelled', first.workflow_id);
    expect((await c.delete(`/v1/run-schedules/${id}`)).status).to.equal(200);
  });

  it('issue 43: a debounced run whose timer a later dispatch pushes out, then releases', async () => {
    const { api_key } = await newTenant();
    const c = client(api_key);
    const body = (n: number) => ({
      agent: 'playbook',
      input: { steps: [{ tool: 'billing.credits_balance', input: {} }], params: { n } },
      flow: { debounce: { key: 'doc', period_seconds: 2 } },
    });
    const first = await c.post('/v1/runs', body(0));
    expect(first.status, first.text).to.equal(202);
    const id = first.body.execution_id;
    const timer = variant.stack.runtime.temporal.client.workflow.getHandle(`run-flow-${id}`);
    await eventually(
      () =>
        timer.describe().then(
          () => true,
          () => false,
        ),
      { what: 'the timer' },
    );
    const second = await c.post('/v1/runs', body(1));
    expect(second.body).to.include({ execution_id: id, debounced: true });
    await runUntil(c, id, (run) => run.status === 'SUCCEEDED', 'the debounced run to succeed');
    await record('run-flow-debounced', `run-flow-${id}`);
  });

  it('a merge review that is approved', async () => {
    const t = await newTenant();
    const c = client(t.api_key);
    for (const name of ['Alan Turing', 'alan turing']) {
      const node = await c.post('/v1/ontology/nodes', {
        type: 'person',
        name,
        properties: { email: 'alan@bletchley.example' },
      });
      expect(node.status, node.text).to.equal(201);
    }
    const candidate = await eventually(async () => (await c.get('/v1/ontology/merges')).body[0], {
      what: 'a merge candidate',
    });
    const approved = await c.post(`/v1/ontology/merges/${candidate.id}/approve`, { notes: 'same person' });
    expect(approved.status, approved.text).to.equal(200);
    await record('merge-review-approved', `merge-${candidate.id}`);
  });

  describe('on a stack of its own', () => {
    let other: { stack: Stack; stop: () => Promise<void> } | undefined;
    let fake: FakeOpenAI | undefined;
    afterEach(async () => {
      await other?.stop();
      await fake?.close();
      other = undefined;
      fake = undefined;
    });

    it('an llm run on OpenAI tool calling: an unknown tool, a valid call, an answer', async function () {
      this.timeout(120_000);
      fake = await startFakeOpenAI();
      const goal = 'How much credit is left?';
      const turns = [
        { toolCalls: [{ name: 'delete_everything', arguments: '{}' }] },
        { toolCalls: [{ name: 'billing_credits_balance', arguments: '{}' }] },
        { content: 'Four credits are left.' },
      ];
      fake.scriptChat((_schema, body) =>
        body?.messages?.[1]?.content === goal
          ? turns[body.messages.filter((message: { role: string }) => message.role === 'tool').length]
          : undefined,
      );
      other = await bootStack({
        WEFT_ENCRYPTION_KEY: HISTORY_ENCRYPTION_KEY,
        OPENAI_API_KEY: 'sk-test',
        OPENAI_BASE_URL: fake.baseUrl,
      });
      const { api_key } = await newTenant(4);
      const c = as(api_key, other.stack.baseUrl);
      const dispatched = await c.post('/v1/runs', { agent: 'llm', input: { goal } });
      expect(dispatched.status, dispatched.text).to.equal(202);
      const id = dispatched.body.execution_id;
      const run = await runUntil(c, id, (body) => ['SUCCEEDED', 'FAILED'].includes(body.status), 'the run to finish');
      expect(run.status).to.equal('SUCCEEDED');
      expect(run.steps).to.have.length(2);
      await record('run-llm-openai', `run-${id}`, other.stack);
    });

    it('a playbook run that continues as new while it waits, then is approved', async function () {
      this.timeout(120_000);
      other = await bootStack({
        WEFT_ENCRYPTION_KEY: HISTORY_ENCRYPTION_KEY,
        RUN_APPROVAL_RECHECK_SECONDS: '1',
        RUN_APPROVAL_RECHECKS_PER_RUN: '1',
      });
      const { api_key, user_jwt } = await newTenant();
      const c = as(api_key, other.stack.baseUrl);
      const dispatched = await c.post('/v1/runs', {
        agent: 'playbook',
        input: {
          steps: [{ tool: 'billing.credits_balance', requires_approval: true }, { tool: 'billing.credits_balance' }],
        },
      });
      expect(dispatched.status, dispatched.text).to.equal(202);
      const id = dispatched.body.execution_id;
      const handle = other.stack.runtime.temporal.client.workflow.getHandle(`run-${id}`);
      const waiting = await runUntil(c, id, (run) => run.approvals.length > 0, 'the approval');
      const first = (await handle.describe()).runId;
      await eventually(async () => (await handle.describe()).runId !== first, { what: 'a continued run' });
      const resolved = await as(user_jwt, other.stack.baseUrl).post(
        `/v1/approvals/${waiting.approvals[0].approval_id}/resolve`,
        { decision: 'APPROVED' },
      );
      expect(resolved.status, resolved.text).to.equal(200);
      expect(await handle.result()).to.deep.equal({ status: 'SUCCEEDED' });
      // The last run, and the run it continued from (which ends in ContinuedAsNew).
      const started = (await handle.fetchHistory()).events?.[0]?.workflowExecutionStartedEventAttributes;
      const before = started?.continuedExecutionRunId;
      expect(before).to.be.a('string');
      await record('run-playbook-continued-before', `run-${id}`, other.stack, before!);
      await record('run-playbook-continued-last', `run-${id}`, other.stack);
    });

    it('issue 40: a playbook run that continues as new while it waits for a budget approval', async function () {
      this.timeout(120_000);
      other = await bootStack({
        WEFT_ENCRYPTION_KEY: HISTORY_ENCRYPTION_KEY,
        RUN_APPROVAL_RECHECK_SECONDS: '1',
        RUN_APPROVAL_RECHECKS_PER_RUN: '1',
      });
      const { api_key, user_jwt } = await newTenant();
      const c = as(api_key, other.stack.baseUrl);
      const dispatched = await c.post('/v1/runs', {
        agent: 'playbook',
        input: { steps: [{ tool: 'billing.credits_balance' }, { tool: 'billing.credits_balance' }] },
        budget: { max_steps: 1 },
      });
      expect(dispatched.status, dispatched.text).to.equal(202);
      const id = dispatched.body.execution_id;
      const handle = other.stack.runtime.temporal.client.workflow.getHandle(`run-${id}`);
      const waiting = await runUntil(c, id, (run) => run.approvals.length > 0, 'the budget approval');
      const first = (await handle.describe()).runId;
      await eventually(async () => (await handle.describe()).runId !== first, { what: 'a continued run' });
      const resolved = await as(user_jwt, other.stack.baseUrl).post(
        `/v1/approvals/${waiting.approvals[0].approval_id}/resolve`,
        { decision: 'APPROVED', edits: { max_steps: 2 } },
      );
      expect(resolved.status, resolved.text).to.equal(200);
      expect(await handle.result()).to.deep.equal({ status: 'SUCCEEDED' });
      const started = (await handle.fetchHistory()).events?.[0]?.workflowExecutionStartedEventAttributes;
      const before = started?.continuedExecutionRunId;
      expect(before).to.be.a('string');
      await record('run-playbook-budget-continued-before', `run-${id}`, other.stack, before!);
      await record('run-playbook-budget-continued-last', `run-${id}`, other.stack);
    });
  });
});
