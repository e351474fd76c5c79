import { execFile } from 'node:child_process';
import { createHash, randomUUID } from 'node:crypto';
import path from 'node:path';
import { promisify } from 'node:util';
import { Client, Connection } from '@temporalio/client';
import { expect } from 'chai';
import { z } from 'zod';
import { createActivities } from '../activities';
import { classifyFailure } from '../activities/failures';
import { SCOPES } from '../src/platform/auth/scopes';
import { NotFoundError } from '../src/platform/errors';
import { defineEvent } from '../src/platform/outbox/event';
import type { OutboxRelay } from '../src/platform/outbox/relay';
import { createOutboxRelay, onEvent } from '../src/platform/outbox/relay';
import type { TemporalHandle } from '../src/platform/temporal/connection';
import { freePort } from '../src/platform/temporal/dev-server';
import { WorkflowStarter } from '../src/platform/temporal/starter';
import { sourceHash } from '../src/prompt/summary';
import { runDispatched } from '../src/runs/events';
import { startRun } from '../src/runs/outbox-handler';
import { createRunService } from '../src/runs/service';
import { stepCorrelationId } from '../src/runs/step-runner';
import { runWorkflow, runWorkflowId } from '../src/runs/workflow';
import { createWorker } from '../workers/worker';
import { eventually, sleep } from './helpers/eventually';
import { as } from './helpers/http';
import { pendingApproval, runUntil, succeeded } from './helpers/runs';
import { getStack } from './helpers/stack';
import { newTenant } from './helpers/tenants';

const ROOT = path.resolve(__dirname, '..');

const owner = () => getStack().ownerDataSource;
const count = async (sql: string, parameters: unknown[]) => Number((await owner().query(sql, parameters))[0].n);
const sessions = (workspaceId: string) =>
  count(`SELECT count(*) AS n FROM agent_sessions WHERE workspace_id = $1`, [workspaceId]);

/** A Temporal frontend nobody listens on: every call fails as it would while the server is down. */
async function unreachableTemporal(): Promise<TemporalHandle & { close(): Promise<void> }> {
  const real = getStack().runtime.temporal;
  // No retry interceptor: each start fails at once instead of retrying inside the client.
  const connection = Connection.lazy({ address: `127.0.0.1:${await freePort()}`, interceptors: [] });
  const client = new Client({ connection, namespace: real.namespace });
  return {
    ...real,
    connection,
    client,
    workflows: new WorkflowStarter(client, real.taskQueue),
    close: () => connection.close(),
  };
}

/** The CLI exactly as an operator runs it, against the test database. */
async function weft(...args: string[]) {
  const { stdout } = await promisify(execFile)(path.join(ROOT, 'node_modules/.bin/tsx'), ['src/cli/main.ts', ...args], {
    cwd: ROOT,
    env: process.env,
  });
  return JSON.parse(stdout);
}

describe('runs: the run reconciler (issue 24)', function () {
  this.timeout(90_000);

  it('resumes a run whose workflow closed while it awaited approval; a resolve made meanwhile is applied', async () => {
    const tenant = await newTenant();
    const client = as(tenant.api_key);
    const dispatched = await client.post('/v1/runs', {
      agent: 'playbook',
      input: {
        steps: [
          { tool: 'billing.credits_balance' },
          { tool: 'agent.start_session', input: { name: 'resumed' }, requires_approval: true },
        ],
      },
    });
    const executionId = dispatched.body.execution_id;
    const approval = await pendingApproval(client, executionId);
    const { temporal, services } = getStack().runtime;
    await temporal.client.workflow.getHandle(runWorkflowId(executionId)).terminate('lost in an outage');

    // The resolve commits; its signal goes to a closed workflow and is lost.
    const resolved = await as(tenant.user_jwt).post(`/v1/approvals/${approval.approval_id}/resolve`, {
      decision: 'APPROVED',
    });
    expect(resolved.status).to.equal(200);
    await sleep(500);
    expect((await client.get(`/v1/runs/${executionId}`)).body.status).to.equal('AWAITING_APPROVAL');

    const pass = await services.runReconciler.reconcileWorkspace(tenant.workspace_id, 0);
    console.log(`      reconciler pass: ${JSON.stringify(pass)}`);
    expect(pass).to.include({ checked: 1, resumed: 1, settled: 0, failed: 0 });
    expect(pass.resumedIds).to.deep.equal([executionId]);

    const run = await succeeded(client, executionId);
    expect(run.steps.map((step: any) => step.status)).to.deep.equal(['SUCCEEDED', 'SUCCEEDED']);
    expect(await sessions(tenant.workspace_id)).to.equal(1);
    const audit = (await client.get(`/v1/runs/${executionId}/audit`)).body;
    expect(audit.valid).to.equal(true);
    expect(audit.steps.map((link: any) => link.kind)).to.deep.equal(['TOOL', 'APPROVAL', 'TOOL']);
    // A pass over a finished run does nothing.
    expect(await services.runReconciler.reconcileWorkspace(tenant.workspace_id, 0)).to.include({ checked: 0 });
  });

  it('settles a run FAILED when its resumed execution closed unfinished too, rather than looping', async () => {
    const tenant = await newTenant();
    const client = as(tenant.api_key);
    const dispatched = await client.post('/v1/runs', {
      agent: 'playbook',
      input: { steps: [{ tool: 'agent.start_session', input: { name: 'twice lost' }, requires_approval: true }] },
    });
    const executionId = dispatched.body.execution_id;
    await pendingApproval(client, executionId);
    const { temporal, services } = getStack().runtime;
    const handle = () => temporal.client.workflow.getHandle(runWorkflowId(executionId));
    await handle().terminate('lost');
    expect(await services.runReconciler.reconcileWorkspace(tenant.workspace_id, 0)).to.include({ resumed: 1 });
    await eventually(async () => (await handle().describe()).status.name === 'RUNNING', { what: 'the resumed run' });
    await handle().terminate('lost again');

    const pass = await services.runReconciler.reconcileWorkspace(tenant.workspace_id, 0);
    expect(pass).to.include({ resumed: 0, settled: 1 });
    const run = (await client.get(`/v1/runs/${executionId}`)).body;
    expect(run.status).to.equal('FAILED');
    expect(run.error.code).to.equal('run_abandoned');
    expect(await sessions(tenant.workspace_id)).to.equal(0);
  });
});

describe('runs: dispatched while Temporal is unreachable (issue 24, M-5)', function () {
  this.timeout(90_000);
  let dead: Awaited<ReturnType<typeof unreachableTemporal>>;
  before(async () => {
    dead = await unreachableTemporal();
  });
  after(async () => {
    await dead.close();
  });

  /** The run service and relay of an API process that cannot reach Temporal. */
  function cutOff(): { relay: OutboxRelay; dispatch: ReturnType<typeof createRunService>['dispatch'] } {
    const { runtime } = getStack();
    const relay = createOutboxRelay({
      uow: runtime.uow,
      handlers: [startRun(dead)],
      logger: runtime.logger,
      // Dead-lettered after two attempts, were the failure permanent; no backoff, so the test need not wait.
      policy: { maxAttempts: 2, retryBaseSeconds: 0, retryMaxSeconds: 0 },
    });
    const runs = createRunService({
      uow: runtime.uow,
      outbox: { kick: () => undefined, delivered: relay.delivered },
      temporal: dead,
      capabilities: runtime.services.capabilities,
      logger: runtime.logger,
      approvalRecheckSeconds: 60,
      approvalRechecksPerRun: 200,
    });
    return { relay, dispatch: runs.dispatch };
  }

  it('run.dispatched is retried past the maximum attempts, never dead-lettered, and starts the run', async () => {
    const tenant = await newTenant();
    const { relay, dispatch } = cutOff();
    const principal = {
      userId: tenant.user_id,
      workspaceId: tenant.workspace_id,
      tenantId: tenant.tenant_id,
      scopes: new Set(SCOPES),
      credential: { kind: 'user_jwt' as const },
    };
    const dispatched = await dispatch(principal, {
      agent: 'playbook',
      input: {
        steps: [{ tool: 'agent.start_session', input: { name: 'after the outage' }, requires_approval: false }],
      },
    } as never);
    expect(dispatched.status).to.equal('QUEUED');
    const executionId = dispatched.execution_id;

    for (let pass = 0; pass < 5; pass++) {
      expect(await relay.drainWorkspace(tenant.workspace_id)).to.include({ failed: 1, deadLettered: 0 });
    }
    const [event] = await owner().query(
      `SELECT attempts, dead_lettered_at, last_error FROM outbox WHERE aggregate_id = $1 AND event_type = $2`,
      [executionId, runDispatched.name],
    );
    console.log(`      after 5 failed deliveries: attempts=${event.attempts}, last_error=${event.last_error}`);
    expect(event.attempts).to.equal(5);
    expect(event.dead_lettered_at).to.equal(null);

    // Temporal is back: the stack's own relay delivers the event and the run finishes.
    expect(await getStack().runtime.outbox.drainWorkspace(tenant.workspace_id)).to.include({ dispatched: 1 });
    const run = await runUntil(as(tenant.api_key), executionId, (body) => body.status === 'SUCCEEDED', 'the run');
    expect(run.steps[0].status).to.equal('SUCCEEDED');
    expect(await sessions(tenant.workspace_id)).to.equal(1);
  });

  it('a permanent failure is dead-lettered, counted, listed by the CLI and re-queued by it', async () => {
    const tenant = await newTenant();
    const { runtime } = getStack();
    const relay = createOutboxRelay({
      uow: runtime.uow,
      handlers: [
        onEvent(defineEvent('test.poison', 1, z.object({})), async () => {
          throw new Error('poison');
        }),
      ],
      logger: runtime.logger,
      policy: { maxAttempts: 2, retryBaseSeconds: 0, retryMaxSeconds: 0 },
    });
    const [{ id }] = await owner().query(
      `INSERT INTO outbox (workspace_id, event_type, aggregate_id) VALUES ($1, 'test.poison', gen_random_uuid())
       RETURNING id::text`,
      [tenant.workspace_id],
    );
    expect(await relay.drainWorkspace(tenant.workspace_id)).to.include({ failed: 1 });
    expect(await relay.drainWorkspace(tenant.workspace_id)).to.include({ deadLettered: 1 });

    const listed = await weft('outbox', 'dead-letters', '--limit', '1000');
    expect(listed.count).to.be.at.least(1);
    const row = listed.dead_letters.find((letter: any) => letter.id === id);
    expect(row).to.include({ workspace_id: tenant.workspace_id, event_type: 'test.poison', attempts: 2 });
    expect(row.last_error).to.equal('poison');

    expect(await weft('outbox', 'requeue', '--id', id)).to.deep.equal({ requeued: 1 });
    const [after] = await owner().query(`SELECT attempts, dead_lettered_at FROM outbox WHERE id = $1`, [id]);
    expect(after).to.deep.equal({ attempts: 0, dead_lettered_at: null });
    expect(await relay.drainWorkspace(tenant.workspace_id)).to.include({ failed: 1, deadLettered: 0 });
  });
});

describe('runs: steps exactly once when attempts overlap (issue 24, M-6, M-7)', function () {
  this.timeout(90_000);

  it('a second attempt that finds the step key in use retries until it is free; the run succeeds once', async () => {
    const tenant = await newTenant();
    const client = as(tenant.api_key);
    const dispatched = await client.post('/v1/runs', {
      agent: 'playbook',
      input: { steps: [{ tool: 'agent.start_session', input: { name: 'overlap' }, requires_approval: true }] },
    });
    const executionId = dispatched.body.execution_id;
    const approval = await pendingApproval(client, executionId);
    // Another attempt of the step holds its idempotency key (as a slow first attempt would).
    const holder = owner().createQueryRunner();
    await holder.connect();
    await holder.startTransaction();
    try {
      await holder.query(`SELECT pg_advisory_xact_lock(hashtextextended($1, 0))`, [
        `capability-key:${tenant.workspace_id}:${executionId}:0`,
      ]);
      await as(tenant.user_jwt).post(`/v1/approvals/${approval.approval_id}/resolve`, { decision: 'APPROVED' });
      await sleep(3000);
      const meanwhile = (await client.get(`/v1/runs/${executionId}`)).body;
      expect(meanwhile.status).to.equal('RUNNING');
    } finally {
      await holder.commitTransaction();
      await holder.release();
    }
    const run = await runUntil(client, executionId, (body) => body.status !== 'RUNNING', 'the run to finish');
    expect(run.status).to.equal('SUCCEEDED');
    expect(await sessions(tenant.workspace_id)).to.equal(1);
    const audit = (await client.get(`/v1/runs/${executionId}/audit`)).body;
    expect(audit.valid).to.equal(true);
    expect(audit.steps.filter((link: any) => link.kind === 'TOOL')).to.have.length(1);
  });

  it('two ontology.ask steps in one run both answer, each under its own correlation id', async () => {
    const tenant = await newTenant(100);
    const client = as(tenant.api_key);
    const dispatched = await client.post('/v1/runs', {
      agent: 'playbook',
      input: {
        steps: [
          { tool: 'ontology.ask', input: { question: 'Who works where?' } },
          { tool: 'ontology.ask', input: { question: 'What organisations exist?' } },
        ],
      },
    });
    const executionId = dispatched.body.execution_id;
    const run = await runUntil(
      client,
      executionId,
      (body) => body.status !== 'QUEUED' && body.status !== 'RUNNING',
      'run',
    );
    expect(run.status, JSON.stringify(run.steps.map((step: any) => step.error))).to.equal('SUCCEEDED');
    const ids = run.steps.map((step: any) => step.output.correlation_id);
    expect(ids).to.deep.equal([stepCorrelationId(executionId, 0), stepCorrelationId(executionId, 1)]);
    expect(new Set(ids).size).to.equal(2);
    const audited = await count(
      `SELECT count(*) AS n FROM prompt_runs
       WHERE workspace_id = $1 AND prompt_kind = 'ontology_ask' AND status = 'ok'`,
      [tenant.workspace_id],
    );
    expect(audited).to.equal(2);
  });
});

describe('runs: a run that gives up is recorded FAILED, never left unfinished (issue 24)', function () {
  this.timeout(60_000);

  it('a transition refused for good (a domain error) ends the row FAILED with that error', async () => {
    const tenant = await newTenant();
    const client = as(tenant.api_key);
    const dispatched = await client.post('/v1/runs', {
      agent: 'playbook',
      input: { steps: [{ tool: 'agent.start_session', input: { name: 'refused' }, requires_approval: true }] },
    });
    const executionId = dispatched.body.execution_id;
    await pendingApproval(client, executionId);
    const { runtime, config } = getStack();
    const { client: temporal } = runtime.temporal;
    await temporal.workflow.getHandle(runWorkflowId(executionId)).terminate('replaced by the test');

    // The run workflow as it is, on a queue of the test's own, over the real activities except one,
    // whose refusal is final (non-retryable), as a domain error's is.
    const taskQueue = `weft-gives-up-${randomUUID().slice(0, 8)}`;
    const { worker, connection } = await createWorker({
      config,
      taskQueue,
      activities: {
        ...createActivities(runtime),
        requestRunApproval: async () => {
          throw classifyFailure(new NotFoundError({ error: 'step_not_found', step: 0 }));
        },
      },
      logLevel: 'error',
    });
    const running = worker.run();
    try {
      const handle = await temporal.workflow.start('runWorkflow', {
        ...runtime.temporal.workflows.options(runWorkflow, [
          { workspaceId: tenant.workspace_id, executionId, agent: 'playbook', stepCount: 1 },
        ]),
        taskQueue,
        workflowIdReusePolicy: 'ALLOW_DUPLICATE',
      });
      expect(await handle.result()).to.deep.equal({ status: 'FAILED' });
    } finally {
      worker.shutdown();
      await running;
      await connection.close();
    }
    const run = (await client.get(`/v1/runs/${executionId}`)).body;
    expect(run.status).to.equal('FAILED');
    expect(run.error).to.include({ code: 'not_found', step: null });
  });
});

describe('runs: a retried ontology.ask reclaims its own correlation (issue 24, M-6)', function () {
  this.timeout(60_000);

  it('a running claim left by a dead attempt of the same step is taken over, and the ask answers', async () => {
    const tenant = await newTenant(100);
    const client = as(tenant.api_key);
    const question = 'Who works where?';
    const dispatched = await client.post('/v1/runs', {
      agent: 'playbook',
      input: { steps: [{ tool: 'ontology.ask', input: { question }, requires_approval: true }] },
    });
    const executionId = dispatched.body.execution_id;
    const approval = await pendingApproval(client, executionId);
    // What an attempt that died mid-ask leaves: the step's claim, still running.
    const correlationId = stepCorrelationId(executionId, 0);
    const requestHash = createHash('sha256')
      .update(JSON.stringify(['ontology.ask', question]), 'utf8')
      .digest('hex');
    await owner().query(
      `INSERT INTO prompt_runs (workspace_id, correlation_id, prompt_kind, source_hash, request_hash, intent, status)
       VALUES ($1, $2, 'ontology_ask', $3, $4, 'query', 'running')`,
      [tenant.workspace_id, correlationId, sourceHash(question), requestHash],
    );

    await as(tenant.user_jwt).post(`/v1/approvals/${approval.approval_id}/resolve`, { decision: 'APPROVED' });
    const run = await runUntil(client, executionId, (body) => ['SUCCEEDED', 'FAILED'].includes(body.status), 'run');
    expect(run.status, JSON.stringify(run.steps[0].error)).to.equal('SUCCEEDED');
    expect(run.steps[0].output.correlation_id).to.equal(correlationId);
    const [audit] = await owner().query(`SELECT status FROM prompt_runs WHERE correlation_id = $1`, [correlationId]);
    expect(audit.status).to.equal('ok');
  });
});
