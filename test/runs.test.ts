import { expect } from 'chai';
import {
  AGENT_ATTRIBUTE,
  RUN_STATUS_ATTRIBUTE,
  WORKSPACE_ID_ATTRIBUTE,
} from '../src/platform/temporal/search-attributes';
import { eventually } from './helpers/eventually';
import { as } from './helpers/http';
import { finished, pendingApproval, runUntil } from './helpers/runs';
import type { Stack } from './helpers/stack';
import { bootStack, getStack } from './helpers/stack';
import { creditBalance, newTenant } from './helpers/tenants';

const playbook = (steps: unknown[], extra: Record<string, unknown> = {}) => ({
  agent: 'playbook',
  input: { steps },
  ...extra,
});

const sessionCount = async (workspaceId: string) =>
  Number(
    (
      await getStack().ownerDataSource.query(`SELECT count(*) AS n FROM agent_sessions WHERE workspace_id = $1`, [
        workspaceId,
      ])
    )[0].n,
  );

describe('runs: dispatch (contract 4.4)', () => {
  it('answers 202 with the execution, QUEUED and not a duplicate', async () => {
    const { api_key } = await newTenant();
    const dispatched = await as(api_key).post('/v1/runs', playbook([{ tool: 'billing.credits_balance' }]));
    expect(dispatched.status).to.equal(202);
    expect(dispatched.body).to.include({ status: 'QUEUED', was_duplicate: false });
    expect(dispatched.body.execution_id).to.match(/^[0-9a-f-]{36}$/);
    expect(dispatched.body.run_id).to.match(/^[0-9a-f-]{36}$/);
    await finished(as(api_key), dispatched.body.execution_id);
  });

  it('checks every step before anything starts: 422 with loc into the step', async () => {
    const { api_key, workspace_id } = await newTenant(10);
    const client = as(api_key);
    const badInput = await client.post(
      '/v1/runs',
      playbook([
        { tool: 'billing.credits_balance' },
        { tool: 'agent.start_session', input: { name: 'ok' } },
        { tool: 'ontology.search', input: { query: 42 } },
      ]),
    );
    expect(badInput.status).to.equal(422);
    expect(badInput.body.detail[0].loc).to.deep.equal(['body', 'input', 'steps', 2, 'input', 'query']);

    const unknown = await client.post('/v1/runs', playbook([{ tool: 'billing.credits_balance' }, { tool: 'no.such' }]));
    expect(unknown.status).to.equal(422);
    expect(unknown.body.detail[0].loc).to.deep.equal(['body', 'input', 'steps', 1, 'tool']);

    const tooMany = await client.post('/v1/runs', playbook(Array(51).fill({ tool: 'billing.credits_balance' })));
    expect(tooMany.status).to.equal(422);
    const fifty = await client.post('/v1/runs', playbook(Array(50).fill({ tool: 'billing.credits_balance' })));
    expect(fifty.status).to.equal(202);

    const listed = await client.get('/v1/runs?limit=200');
    expect(listed.body.runs).to.have.length(1);
    expect(await sessionCount(workspace_id)).to.equal(0);
    await finished(client, fifty.body.execution_id);
  });

  it('needs runs:write', async () => {
    const { user_jwt } = await newTenant();
    const reader = (await as(user_jwt).post('/v1/auth/me/api-keys', { name: 'r', scopes: ['runs:read'] })).body.token;
    const refused = await as(reader).post('/v1/runs', playbook([{ tool: 'billing.credits_balance' }]));
    expect(refused.status).to.equal(403);
  });

  it('replays a repeated idempotency_key, refuses another body (409), starts one run for 20 at once', async () => {
    const { api_key } = await newTenant();
    const client = as(api_key);
    const body = playbook([{ tool: 'billing.credits_balance' }], { idempotency_key: 'nightly-1' });
    const first = await client.post('/v1/runs', body);
    const again = await client.post('/v1/runs', body);
    expect(again.status).to.equal(202);
    expect(again.body).to.include({ execution_id: first.body.execution_id, was_duplicate: true });
    const other = await client.post('/v1/runs', { ...body, input: { steps: [{ tool: 'agent.failure_clusters' }] } });
    expect(other.status).to.equal(409);

    const concurrent = playbook([{ tool: 'billing.credits_balance' }], { idempotency_key: 'burst' });
    const answers = await Promise.all(Array.from({ length: 20 }, () => client.post('/v1/runs', concurrent)));
    expect(answers.map((answer) => answer.status)).to.deep.equal(Array(20).fill(202));
    expect(new Set(answers.map((answer) => answer.body.execution_id)).size).to.equal(1);
    expect(answers.filter((answer) => !answer.body.was_duplicate)).to.have.length(1);
    const listed = await client.get('/v1/runs');
    expect(listed.body.runs).to.have.length(2);
    await finished(client, answers[0]!.body.execution_id);
  });
});

describe('runs: a playbook run (contract 4.4, 2.10)', () => {
  it('runs its steps in order through the registry to SUCCEEDED, with step rows and charges', async () => {
    const { api_key, tenant_id, workspace_id } = await newTenant(10);
    const client = as(api_key);
    const dispatched = await client.post(
      '/v1/runs',
      playbook([
        { tool: 'billing.credits_balance' },
        { tool: 'agent.start_session', input: { name: 'nightly review' } },
        { tool: 'ontology.search', input: { query: 'billing' } },
      ]),
    );
    const run = await finished(client, dispatched.body.execution_id);
    expect(run.status).to.equal('SUCCEEDED');
    expect(run.error).to.equal(null);
    expect(run.steps.map((step: any) => [step.tool, step.status, step.credits_charged])).to.deep.equal([
      ['billing.credits_balance', 'SUCCEEDED', 0],
      ['agent.start_session', 'SUCCEEDED', 0],
      ['ontology.search', 'SUCCEEDED', 1],
    ]);
    expect(run.steps[0].output).to.deep.equal({ balance: 10, locked: false });
    expect(run.steps[1].output.session_id).to.match(/^[0-9a-f-]{36}$/);
    for (const step of run.steps) {
      expect(Date.parse(step.finished_at)).to.be.at.least(Date.parse(step.started_at));
    }
    expect(run.output).to.deep.equal(run.steps[2].output);
    expect(run.credits_charged).to.equal(1);
    expect(await creditBalance(tenant_id)).to.equal(9);
    expect(await sessionCount(workspace_id)).to.equal(1);
  });

  it('fails the run at a refused step with {code, message, step}, charging nothing for it', async () => {
    // Admitted with the credit its search needs (issue 43 item 4), then the balance is spent elsewhere
    // while the run waits for its first step's approval: the search is refused when it runs.
    const { api_key, user_jwt, tenant_id } = await newTenant(1);
    const client = as(api_key);
    const dispatched = await client.post(
      '/v1/runs',
      playbook([
        { tool: 'billing.credits_balance', requires_approval: true },
        { tool: 'ontology.search', input: { query: 'billing' } },
        { tool: 'billing.credits_balance' },
      ]),
    );
    expect(dispatched.status, dispatched.text).to.equal(202);
    const approval = await pendingApproval(client, dispatched.body.execution_id);
    await getStack().ownerDataSource.query(`UPDATE tenants SET credit_balance = 0 WHERE id = $1`, [tenant_id]);
    const approved = await as(user_jwt).post(`/v1/approvals/${approval.approval_id}/resolve`, { decision: 'APPROVED' });
    expect(approved.status, approved.text).to.equal(200);
    const run = await finished(client, dispatched.body.execution_id);
    expect(run.status).to.equal('FAILED');
    expect(run.error).to.include({ code: 'insufficient_credits', step: 1 });
    expect(run.error.message).to.be.a('string');
    expect(run.steps.map((step: any) => step.status)).to.deep.equal(['SUCCEEDED', 'FAILED', 'PENDING']);
    expect(run.steps[1].credits_charged).to.equal(0);
    expect(run.credits_charged).to.equal(0);
    expect(await creditBalance(tenant_id)).to.equal(0);
  });
});

describe('runs: approvals (contract 4.4, section 3)', () => {
  it('waits for an approval, then runs the step once APPROVED', async () => {
    const { api_key, user_jwt, workspace_id, user_id } = await newTenant();
    const client = as(api_key);
    // The approval comes from another credential than the dispatching key (docs/approvals.md).
    const reviewer = as(user_jwt);
    const dispatched = await client.post(
      '/v1/runs',
      playbook([
        { tool: 'billing.credits_balance' },
        { tool: 'agent.start_session', input: { name: 'needs a human' }, requires_approval: true },
      ]),
    );
    const approval = await pendingApproval(client, dispatched.body.execution_id);
    expect(approval).to.deep.include({ execution_id: dispatched.body.execution_id, status: 'pending' });
    expect(approval.step).to.deep.equal({ step_no: 1, tool: 'agent.start_session', input: { name: 'needs a human' } });
    expect(await sessionCount(workspace_id)).to.equal(0);

    const pending = await client.get('/v1/approvals?status=pending');
    expect(pending.body.approvals.map((row: any) => row.approval_id)).to.deep.equal([approval.approval_id]);
    expect((await client.get(`/v1/approvals/${approval.approval_id}`)).body.status).to.equal('pending');

    const resolved = await reviewer.post(`/v1/approvals/${approval.approval_id}/resolve`, {
      decision: 'APPROVED',
      notes: 'fine',
    });
    expect(resolved.status).to.equal(200);
    const { dispatcher_resolved, ...answer } = resolved.body;
    expect(answer).to.deep.equal({
      approval_id: approval.approval_id,
      decision: 'APPROVED',
      execution_id: dispatched.body.execution_id,
      status: 'approved',
      approvals_remaining: 0,
    });
    // The reviewer is the workspace's only member, who dispatched: `when_alone` lets them, and says so.
    expect(dispatcher_resolved).to.include({ policy: 'when_alone' });
    const run = await finished(client, dispatched.body.execution_id);
    expect(run.status).to.equal('SUCCEEDED');
    expect(run.approvals[0]).to.include({ status: 'approved', resolved_by: user_id, notes: 'fine' });
    expect(await sessionCount(workspace_id)).to.equal(1);

    const twice = await reviewer.post(`/v1/approvals/${approval.approval_id}/resolve`, { decision: 'REJECTED' });
    expect(twice.status).to.equal(409);
  });

  it('fails the run with approval_rejected when REJECTED; later steps never run', async () => {
    const { api_key, user_jwt, workspace_id } = await newTenant();
    const client = as(api_key);
    const dispatched = await client.post(
      '/v1/runs',
      playbook([
        { tool: 'agent.start_session', input: { name: 'gated' }, requires_approval: true },
        { tool: 'agent.start_session', input: { name: 'after' } },
      ]),
    );
    const approval = await pendingApproval(client, dispatched.body.execution_id);
    expect(
      (await as(user_jwt).post(`/v1/approvals/${approval.approval_id}/resolve`, { decision: 'REJECTED' })).status,
    ).to.equal(200);
    const run = await finished(client, dispatched.body.execution_id);
    expect(run.status).to.equal('FAILED');
    expect(run.error).to.include({ code: 'approval_rejected', step: 0 });
    expect(run.steps.map((step: any) => step.status)).to.deep.equal(['PENDING', 'PENDING']);
    expect(await sessionCount(workspace_id)).to.equal(0);
  });

  it('answers one of ten concurrent resolves with 200 and the rest with 409', async () => {
    const { api_key, user_jwt } = await newTenant();
    const client = as(api_key);
    const dispatched = await client.post(
      '/v1/runs',
      playbook([{ tool: 'billing.credits_balance', requires_approval: true }]),
    );
    const approval = await pendingApproval(client, dispatched.body.execution_id);
    const answers = await Promise.all(
      Array.from({ length: 10 }, (_, at) =>
        as(user_jwt).post(`/v1/approvals/${approval.approval_id}/resolve`, {
          decision: at % 2 ? 'APPROVED' : 'REJECTED',
        }),
      ),
    );
    expect(answers.map((answer) => answer.status).sort()).to.deep.equal([200, ...Array(9).fill(409)]);
    await finished(client, dispatched.body.execution_id);
  });
});

describe('runs: cancel, read and isolation (contract 4.4)', () => {
  it('cancels a waiting run and its approval, idempotently; a finished run is a 409', async () => {
    const { api_key, user_jwt, workspace_id } = await newTenant();
    const client = as(api_key);
    const dispatched = await client.post(
      '/v1/runs',
      playbook([{ tool: 'agent.start_session', input: { name: 'never' }, requires_approval: true }]),
    );
    const id = dispatched.body.execution_id;
    const approval = await pendingApproval(client, id);
    const cancelled = await client.post(`/v1/runs/${id}/cancel`);
    expect(cancelled.status).to.equal(200);
    expect(cancelled.body.status).to.equal('CANCELLED');
    expect((await client.post(`/v1/runs/${id}/cancel`)).status).to.equal(200);
    const run = (await client.get(`/v1/runs/${id}`)).body;
    expect(run.approvals[0].status).to.equal('cancelled');
    expect(run.steps[0].status).to.equal('SKIPPED');
    const late = await as(user_jwt).post(`/v1/approvals/${approval.approval_id}/resolve`, { decision: 'APPROVED' });
    expect(late.status).to.equal(409);
    const history = await getStack().runtime.temporal.client.workflow.getHandle(`run-${id}`).result();
    expect(history).to.deep.equal({ status: 'CANCELLED' });
    expect(await sessionCount(workspace_id)).to.equal(0);

    const done = await client.post('/v1/runs', playbook([{ tool: 'billing.credits_balance' }]));
    await finished(client, done.body.execution_id);
    expect((await client.post(`/v1/runs/${done.body.execution_id}/cancel`)).status).to.equal(409);
  });

  it('lists runs newest first with filters and a cursor', async () => {
    const { api_key } = await newTenant();
    const client = as(api_key);
    const ids: string[] = [];
    for (let at = 0; at < 3; at++) {
      ids.push((await client.post('/v1/runs', playbook([{ tool: 'billing.credits_balance' }]))).body.execution_id);
    }
    for (const id of ids) await finished(client, id);
    const first = await client.get('/v1/runs?limit=2');
    expect(first.status).to.equal(200);
    expect(first.body.runs.map((run: any) => run.execution_id)).to.deep.equal([ids[2], ids[1]]);
    const second = await client.get(`/v1/runs?limit=2&cursor=${first.body.next_cursor}`);
    expect(second.body.runs.map((run: any) => run.execution_id)).to.deep.equal([ids[0]]);
    expect(second.body.next_cursor).to.equal(null);
    expect((await client.get('/v1/runs?status=SUCCEEDED&agent=playbook')).body.runs).to.have.length(3);
    expect((await client.get('/v1/runs?status=FAILED')).body.runs).to.have.length(0);
  });

  it('answers 404 for another workspace’s runs and approvals, everywhere', async () => {
    const victim = await newTenant();
    const attacker = await newTenant();
    const dispatched = await as(victim.api_key).post(
      '/v1/runs',
      playbook([{ tool: 'billing.credits_balance', requires_approval: true }]),
    );
    const id = dispatched.body.execution_id;
    const approval = await pendingApproval(as(victim.api_key), id);
    const thief = as(attacker.api_key);
    expect((await thief.get(`/v1/runs/${id}`)).status).to.equal(404);
    expect((await thief.post(`/v1/runs/${id}/cancel`)).status).to.equal(404);
    expect((await thief.get(`/v1/approvals/${approval.approval_id}`)).status).to.equal(404);
    const resolve = await thief.post(`/v1/approvals/${approval.approval_id}/resolve`, { decision: 'APPROVED' });
    expect(resolve.status).to.equal(404);
    expect((await thief.get('/v1/runs')).body.runs).to.have.length(0);
    expect((await thief.get('/v1/approvals')).body.approvals).to.have.length(0);
    expect((await as(victim.api_key).get(`/v1/runs/${id}`)).body.status).to.equal('AWAITING_APPROVAL');
    await as(victim.api_key).post(`/v1/runs/${id}/cancel`);
  });
});

describe('runs: reserved step keys and late charges (review L-9, L-11)', () => {
  it('refuses an Idempotency-Key shaped like a run step’s key on /v1/cap (422); the run’s step runs', async () => {
    const { api_key, user_jwt, workspace_id } = await newTenant();
    const client = as(api_key);
    const dispatched = await client.post(
      '/v1/runs',
      playbook([{ tool: 'agent.start_session', input: { name: 'mine' }, requires_approval: true }]),
    );
    const id = dispatched.body.execution_id;
    const approval = await pendingApproval(client, id);
    const taken = await client.post(
      '/v1/cap/agent.start_session',
      { name: 'pre-empted' },
      { 'Idempotency-Key': `${id}:0` },
    );
    expect(taken.status).to.equal(422);
    expect(taken.body.detail[0].loc).to.deep.equal(['header', 'Idempotency-Key']);
    expect(taken.body.detail[0].msg).to.match(/reserved for run steps/);
    const upper = await client.post(
      '/v1/cap/agent.start_session',
      { name: 'pre-empted' },
      { 'Idempotency-Key': `${id.toUpperCase()}:0` },
    );
    expect(upper.status).to.equal(422);
    const fine = await client.post('/v1/cap/agent.start_session', { name: 'ok' }, { 'Idempotency-Key': `${id}-0` });
    expect(fine.status).to.equal(200);

    await as(user_jwt).post(`/v1/approvals/${approval.approval_id}/resolve`, { decision: 'APPROVED' });
    const run = await finished(client, id);
    expect(run.status).to.equal('SUCCEEDED');
    expect(run.steps[0].output.session_id).to.not.equal(fine.body.result.session_id);
    expect(await sessionCount(workspace_id)).to.equal(2);
  });

  it('a cancel during a running step reports what that step charged once it lands', async () => {
    const { api_key, tenant_id } = await newTenant(10);
    const client = as(api_key);
    // The step's charge waits on the tenant's row, held here, so the cancel comes while it runs.
    const holder = getStack().ownerDataSource.createQueryRunner();
    await holder.connect();
    await holder.startTransaction();
    try {
      await holder.query(`SELECT 1 FROM tenants WHERE id = $1 FOR UPDATE`, [tenant_id]);
      const dispatched = await client.post('/v1/runs', playbook([{ tool: 'ontology.search', input: { query: 'x' } }]));
      const id = dispatched.body.execution_id;
      await runUntil(client, id, (run) => run.steps[0].status === 'RUNNING', 'the step to run');
      const cancelled = await client.post(`/v1/runs/${id}/cancel`);
      expect(cancelled.body).to.include({ status: 'CANCELLED', credits_charged: 0 });
      await holder.commitTransaction();
      const run = await runUntil(client, id, (body) => body.steps[0].status === 'SUCCEEDED', 'the step to land');
      expect(run.steps[0].credits_charged).to.equal(1);
      expect(run).to.include({ status: 'CANCELLED', credits_charged: 1 });
      const listed = (await client.get('/v1/runs')).body.runs.find((row: any) => row.execution_id === id);
      expect(listed.credits_charged).to.equal(1);
      expect(await creditBalance(tenant_id)).to.equal(9);
    } finally {
      if (holder.isTransactionActive) await holder.rollbackTransaction();
      await holder.release();
    }
  });
});

describe('runs: operating them in Temporal', () => {
  it('names each run run-<execution_id>, with a summary and WeftWorkspaceId, WeftAgent and WeftRunStatus', async () => {
    const { api_key, user_jwt, workspace_id } = await newTenant();
    const client = as(api_key);
    const dispatched = await client.post(
      '/v1/runs',
      playbook([{ tool: 'billing.credits_balance' }, { tool: 'billing.credits_balance', requires_approval: true }]),
    );
    const id = dispatched.body.execution_id;
    const approval = await pendingApproval(client, id);
    const handle = getStack().runtime.temporal.client.workflow.getHandle(`run-${id}`);
    const waiting = await eventually(
      async () => {
        const described = await handle.describe();
        return described.typedSearchAttributes.get(RUN_STATUS_ATTRIBUTE) === 'AWAITING_APPROVAL' && described;
      },
      { what: 'WeftRunStatus AWAITING_APPROVAL' },
    );
    expect(waiting.typedSearchAttributes.get(WORKSPACE_ID_ATTRIBUTE)).to.equal(workspace_id);
    expect(waiting.typedSearchAttributes.get(AGENT_ATTRIBUTE)).to.equal('playbook');
    expect(await waiting.staticSummary()).to.equal('playbook run of 2 steps');

    await as(user_jwt).post(`/v1/approvals/${approval.approval_id}/resolve`, { decision: 'APPROVED' });
    expect(await handle.result()).to.deep.equal({ status: 'SUCCEEDED' });
    expect((await handle.describe()).typedSearchAttributes.get(RUN_STATUS_ATTRIBUTE)).to.equal('SUCCEEDED');
  });

  it('runs a playbook of n steps without approvals as its n step activities and nothing else (issue 27)', async () => {
    const { api_key } = await newTenant();
    const client = as(api_key);
    const steps = [{ tool: 'billing.credits_balance' }, { tool: 'agent.start_session', input: { name: 'fused' } }];
    const dispatched = await client.post('/v1/runs', playbook([...steps, { tool: 'billing.credits_balance' }]));
    const handle = getStack().runtime.temporal.client.workflow.getHandle(`run-${dispatched.body.execution_id}`);
    expect(await handle.result()).to.deep.equal({ status: 'SUCCEEDED' });
    const events = (await handle.fetchHistory()).events ?? [];
    // Three activities and the one patch marker: no local activity began, decided or finished the run.
    expect(events.filter((event) => event.activityTaskScheduledEventAttributes)).to.have.length(3);
    expect(events.filter((event) => event.markerRecordedEventAttributes)).to.have.length(1);
    const run = (await client.get(`/v1/runs/${dispatched.body.execution_id}`)).body;
    expect(run.status).to.equal('SUCCEEDED');
    expect(run.steps.map((step: { status: string }) => step.status)).to.deep.equal([
      'SUCCEEDED',
      'SUCCEEDED',
      'SUCCEEDED',
    ]);
    // The run's output is its last step's, as finishing it on its own would make it.
    expect(run.output).to.deep.equal(run.steps[2].output);
  });
});

describe('runs: a resolve whose signal was lost (RUN_APPROVAL_RECHECK_SECONDS=1)', () => {
  let variant: { stack: Stack; stop: () => Promise<void> };
  before(async () => {
    variant = await bootStack({ RUN_APPROVAL_RECHECK_SECONDS: '1' });
  });
  after(() => variant?.stop());

  it('still reaches the run: its re-check timer reads the committed decision', async () => {
    const { api_key } = await newTenant();
    const client = as(api_key, variant.stack.baseUrl);
    const dispatched = await client.post(
      '/v1/runs',
      playbook([{ tool: 'billing.credits_balance', requires_approval: true }]),
    );
    const approval = await pendingApproval(client, dispatched.body.execution_id);
    // The API's commit without its signal: as if it died right after the transaction.
    await variant.stack.ownerDataSource.query(
      `UPDATE run_approvals SET status = 'approved', resolved_at = now() WHERE id = $1`,
      [approval.approval_id],
    );
    const run = await finished(client, dispatched.body.execution_id);
    expect(run.status).to.equal('SUCCEEDED');
  });
});
