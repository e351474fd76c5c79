import { randomUUID } from 'node:crypto';
import { expect } from 'chai';
import { createActivities } from '../activities';
import { deleteMaintenanceSchedules } from '../src/app/schedules';
import { WorkflowStarter } from '../src/platform/temporal/starter';
import { runChangedSignal, runWorkflow, runWorkflowId } from '../src/runs/workflow';
import { createWorker } from '../workers/worker';
import { capClient } from './helpers/cap';
import { eventually, sleep } from './helpers/eventually';
import { as } from './helpers/http';
import { pendingApproval, succeeded } from './helpers/runs';
import { getStack } from './helpers/stack';
import { creditBalance, newTenant } from './helpers/tenants';
import type { FileTemporal, WeftProcess } from './helpers/weft-process';
import { fileTemporal, startApiProcess, startWorkerProcess } from './helpers/weft-process';

// A restarted worker first waits out its dead predecessor's sticky queue (about 10 s).
const RESTARTED = { timeoutMs: 45_000, intervalMs: 200 };

/**
 * A transaction of the test's own, on the owner connection, holding a lock the run's worker will
 * need; `blocking()` waits until some backend (the worker's) is waiting for it.
 */
async function holdLock(sql: string, parameters: unknown[]) {
  const runner = getStack().ownerDataSource.createQueryRunner();
  await runner.connect();
  await runner.startTransaction();
  const [{ pid }] = await runner.query('SELECT pg_backend_pid() AS pid');
  await runner.query(sql, parameters);
  return {
    blocking: (what: string) =>
      eventually(
        async () =>
          Number(
            (
              await getStack().ownerDataSource.query(
                `SELECT count(*) AS n FROM pg_stat_activity WHERE $1 = ANY(pg_blocking_pids(pid))`,
                [pid],
              )
            )[0].n,
          ) > 0,
        { what, timeoutMs: 45_000, intervalMs: 50 },
      ),
    async release() {
      if (runner.isReleased) return;
      await runner.commitTransaction();
      await runner.release();
    },
  };
}

const count = async (sql: string, parameters: unknown[]) =>
  Number((await getStack().ownerDataSource.query(sql, parameters))[0].n);

describe('runs durability: worker, API and Temporal server killed (real processes)', function () {
  this.timeout(120_000);
  // The worker and the API as separate processes on a Temporal server of the test's own, which keeps
  // its state in a file as `npm start`'s does, so that it too can be killed and started again.
  const taskQueue = `weft-durability-runs-${randomUUID().slice(0, 8)}`;
  let temporal: FileTemporal;
  let api: WeftProcess | undefined;
  let worker: WeftProcess | undefined;
  const env = () => ({ TEMPORAL_ADDRESS: temporal.address, TEMPORAL_TASK_QUEUE: taskQueue });

  async function startApi() {
    api = await startApiProcess(env());
    // The API process writes the maintenance schedules; nothing here should run them.
    await deleteMaintenanceSchedules(await temporal.client(), taskQueue);
    return api;
  }

  before(async () => {
    temporal = await fileTemporal();
    await temporal.start();
    worker = startWorkerProcess(env());
    await startApi();
  });
  after(async () => {
    await worker?.kill();
    await api?.kill();
    await temporal?.remove();
  });

  it('SIGKILL mid-step: the next worker finishes the run; one claim made, the search charged once', async () => {
    const tenant = await newTenant(10);
    const client = as(tenant.api_key, api!.baseUrl);
    const [node] = await getStack().ownerDataSource.query(
      `INSERT INTO nodes (workspace_id, type, name) VALUES ($1, 'code.module', 'billing/retry.ts') RETURNING id`,
      [tenant.workspace_id],
    );
    const session = (await capClient(tenant.api_key, api!.baseUrl)('agent.start_session', { name: 'durability' })).body
      .result;

    // The claim step will wait inside its transaction for the workspace's claim lock, held here.
    const claimLock = await holdLock(`SELECT pg_advisory_xact_lock(hashtextextended($1, 0))`, [
      `agent-claims:${tenant.workspace_id}`,
    ]);
    const dispatched = await client.post('/v1/runs', {
      agent: 'playbook',
      input: {
        steps: [
          { tool: 'agent.claim_work', input: { session_id: session.session_id, target_node_id: node.id, intent: 'x' } },
          { tool: 'ontology.search', input: { query: 'retry' } },
        ],
      },
    });
    expect(dispatched.status).to.equal(202);
    const executionId = dispatched.body.execution_id;
    await claimLock.blocking('the claim step to wait for the claim lock');
    // Its step row is RUNNING and committed; holding it makes the step's completion wait.
    const stepLock = await holdLock(`SELECT 1 FROM run_steps WHERE execution_id = $1 AND step_no = 0 FOR UPDATE`, [
      executionId,
    ]);
    await claimLock.release();
    await stepLock.blocking('the claim to commit and the step to wait to record it');
    expect(await count(`SELECT count(*) AS n FROM agent_claims WHERE session_id = $1`, [session.session_id])).to.equal(
      1,
    );

    // Killed after the claim committed, before its step did: the retry must not claim again.
    await worker!.kill();
    await stepLock.release();
    worker = startWorkerProcess(env());

    const run = await succeeded(client, executionId, RESTARTED);
    expect(run.steps.map((step: any) => step.status)).to.deep.equal(['SUCCEEDED', 'SUCCEEDED']);
    expect(run.steps[0].output.claim_id).to.be.a('string');
    expect(run.credits_charged).to.equal(1);
    expect(await count(`SELECT count(*) AS n FROM agent_claims WHERE session_id = $1`, [session.session_id])).to.equal(
      1,
    );
    const charges = await getStack().ownerDataSource.query(
      `SELECT amount FROM credit_ledger WHERE workspace_id = $1 AND kind = 'ontology.search.hybrid'`,
      [tenant.workspace_id],
    );
    expect(charges.map((row: { amount: number }) => row.amount)).to.deep.equal([-1]);
    expect(await creditBalance(tenant.tenant_id)).to.equal(9);
  });

  it('a run awaiting approval survives restarts of the worker, the API and the Temporal server', async () => {
    const tenant = await newTenant();
    const dispatched = await as(tenant.api_key, api!.baseUrl).post('/v1/runs', {
      agent: 'playbook',
      input: {
        steps: [
          { tool: 'billing.credits_balance' },
          { tool: 'agent.start_session', input: { name: 'after restarts' }, requires_approval: true },
        ],
      },
    });
    const executionId = dispatched.body.execution_id;
    const approval = await pendingApproval(as(tenant.api_key, api!.baseUrl), executionId, RESTARTED);

    await worker!.kill();
    await api!.kill();
    await temporal.kill();
    await temporal.start();
    const restarted = (await startApi()).baseUrl;
    const client = as(tenant.api_key, restarted);
    worker = startWorkerProcess(env());

    // The restarted server still holds the waiting execution (its file), the database the run.
    const described = await (await temporal.client()).workflow.getHandle(`run-${executionId}`).describe();
    expect(described.status.name).to.equal('RUNNING');
    expect((await client.get(`/v1/runs/${executionId}`)).body.status).to.equal('AWAITING_APPROVAL');

    // Another credential than the dispatching key resolves (separation of duties, docs/approvals.md).
    const resolved = await as(tenant.user_jwt, restarted).post(`/v1/approvals/${approval.approval_id}/resolve`, {
      decision: 'APPROVED',
    });
    expect(resolved.status).to.equal(200);
    const run = await succeeded(client, executionId, RESTARTED);
    expect(run.steps.map((step: any) => step.status)).to.deep.equal(['SUCCEEDED', 'SUCCEEDED']);
    expect(
      await count(`SELECT count(*) AS n FROM agent_sessions WHERE workspace_id = $1`, [tenant.workspace_id]),
    ).to.equal(1);
  });

  it('a resolve made while no worker runs is applied when a worker comes back', async () => {
    const tenant = await newTenant();
    const client = as(tenant.api_key, api!.baseUrl);
    const dispatched = await client.post('/v1/runs', {
      agent: 'playbook',
      input: { steps: [{ tool: 'agent.start_session', input: { name: 'resolved offline' }, requires_approval: true }] },
    });
    const executionId = dispatched.body.execution_id;
    const approval = await pendingApproval(client, executionId, RESTARTED);

    await worker!.kill();
    // Another credential than the dispatching key resolves (separation of duties, docs/approvals.md).
    const resolved = await as(tenant.user_jwt, api!.baseUrl).post(`/v1/approvals/${approval.approval_id}/resolve`, {
      decision: 'APPROVED',
    });
    expect(resolved.status).to.equal(200);
    // The signal reached the server although no worker could take it; the step has not run.
    const handle = (await temporal.client()).workflow.getHandle(`run-${executionId}`);
    await eventually(
      async () => (await handle.fetchHistory()).events?.some((event) => event.workflowExecutionSignaledEventAttributes),
      { what: 'the resolve signal in the run workflow history', timeoutMs: 15_000, intervalMs: 200 },
    );
    expect((await client.get(`/v1/runs/${executionId}`)).body.steps[0].status).to.equal('PENDING');

    worker = startWorkerProcess(env());
    const run = await succeeded(client, executionId, RESTARTED);
    expect(run.approvals[0].status).to.equal('approved');
    expect(
      await count(`SELECT count(*) AS n FROM agent_sessions WHERE workspace_id = $1`, [tenant.workspace_id]),
    ).to.equal(1);
  });
});

describe('runs: a resolve that arrives while the approval is still being requested', function () {
  this.timeout(60_000);

  it('is not lost: the run goes on at once, not at the next re-check', async () => {
    const { runtime, config } = getStack();
    const taskQueue = `weft-durability-signal-${randomUUID().slice(0, 8)}`;
    const { client } = runtime.temporal;
    const executionId = randomUUID();
    const handle = client.workflow.getHandle(runWorkflowId(executionId));
    // The run workflow as it is, over activities that stand in for the database: the reviewer's
    // resolve (and its signal) lands after the approval row committed, before the workflow has
    // seen the activity's answer, which still says `pending`.
    const { worker, connection } = await createWorker({
      config,
      taskQueue,
      activities: {
        ...createActivities(runtime),
        beginRun: async () => ({
          status: 'RUNNING' as const,
          maxSteps: 8,
          llmCalls: 0,
          steps: [{ stepNo: 0, tool: 'agent.start_session', requiresApproval: true }],
          userId: randomUUID(),
        }),
        requestRunApproval: async () => {
          await handle.signal(runChangedSignal, { reason: 'approval_resolved' });
          return { run: 'AWAITING_APPROVAL' as const, approval: 'pending' as const };
        },
        runApprovalState: async () => ({ run: 'AWAITING_APPROVAL' as const, approval: 'approved' as const }),
        resumeRun: async () => true,
        runStep: async () => ({ status: 'SUCCEEDED' as const }),
        finishRun: async () => 'SUCCEEDED' as const,
      },
      logLevel: 'error',
    });
    const running = worker.run();
    try {
      await new WorkflowStarter(client, taskQueue).start(runWorkflow, {
        workspaceId: randomUUID(),
        executionId,
        agent: 'playbook',
        stepCount: 1,
        // Were the signal lost, only this re-check would wake the run: far beyond the test's timeout.
        approvalRecheckSeconds: 3600,
      });
      const outcome = await Promise.race([handle.result(), sleep(20_000).then(() => 'still waiting')]);
      expect(outcome).to.deep.equal({ status: 'SUCCEEDED' });
    } finally {
      await handle.terminate('test cleanup').catch(() => undefined);
      worker.shutdown();
      await running;
      await connection.close();
    }
  });
});
