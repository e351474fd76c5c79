import { randomUUID } from 'node:crypto';
import { expect } from 'chai';
import { deleteMaintenanceSchedules } from '../src/app/schedules';
import { runWorkflowId } from '../src/runs/workflow';
import { eventually, sleep } from './helpers/eventually';
import type { FaultProxy } from './helpers/fault-proxy';
import { startFaultProxy, throughProxy } from './helpers/fault-proxy';
import { as } from './helpers/http';
import { pendingApproval, succeeded } from './helpers/runs';
import { getStack } from './helpers/stack';
import { newTenant } from './helpers/tenants';
import type { WeftProcess } from './helpers/weft-process';
import { startApiProcess, startWorkerProcess } from './helpers/weft-process';

// Past the outage and the retries behind it.
const OUTAGE_WAIT = { timeoutMs: 60_000, intervalMs: 250 };

// Longer than the ≈45 s of retries after which the run workflow used to fail (review H-4).
const OUTAGE_MS = 55_000;

describe('runs: a Postgres outage longer than the old retries (real processes, fault proxy)', function () {
  this.timeout(240_000);
  const taskQueue = `weft-outage-runs-${randomUUID().slice(0, 8)}`;
  let proxy: FaultProxy;
  let api: WeftProcess | undefined;
  let worker: WeftProcess | undefined;

  before(async () => {
    const database = new URL(process.env.DATABASE_URL!);
    proxy = await startFaultProxy(`${database.hostname}:${database.port || '5432'}`);
    // The API and the worker reach Postgres only through the proxy; the test's own checks go direct.
    const env = {
      TEMPORAL_TASK_QUEUE: taskQueue,
      DATABASE_URL: throughProxy(process.env.DATABASE_URL!, proxy),
      // A waiting run re-reads its approval every second, so the outage hits many re-reads.
      RUN_APPROVAL_RECHECK_SECONDS: '1',
    };
    worker = startWorkerProcess(env);
    api = await startApiProcess(env);
    await deleteMaintenanceSchedules(getStack().runtime.temporal.client, taskQueue);
  });
  after(async () => {
    await worker?.kill();
    await api?.kill();
    await proxy?.close();
    await deleteMaintenanceSchedules(getStack().runtime.temporal.client, taskQueue);
  });

  it('a waiting run outlives it; meanwhile the API answers 503 with Retry-After; then a resolve applies', async () => {
    const tenant = await newTenant();
    const client = as(tenant.api_key, api!.baseUrl);
    // A different credential resolves: the one that dispatched a run never approves it (issue 23).
    const reviewer = as(tenant.user_jwt, api!.baseUrl);
    const dispatched = await client.post('/v1/runs', {
      agent: 'playbook',
      input: {
        steps: [
          { tool: 'billing.credits_balance' },
          { tool: 'agent.start_session', input: { name: 'outlived' }, requires_approval: true },
        ],
      },
    });
    expect(dispatched.status).to.equal(202);
    const executionId = dispatched.body.execution_id;
    const approvalId = (await pendingApproval(client, executionId, OUTAGE_WAIT)).approval_id;

    const started = Date.now();
    await proxy.inject('cut');
    console.log(`      injected: Postgres cut for ${OUTAGE_MS / 1000} s (API and worker behind the proxy)`);
    const answers: number[] = [];
    let retryAfter: string | null = null;
    while (Date.now() - started < OUTAGE_MS) {
      const read = await client.get(`/v1/runs/${executionId}`);
      const resolve = await reviewer.post(`/v1/approvals/${approvalId}/resolve`, { decision: 'APPROVED' });
      for (const response of [read, resolve]) {
        answers.push(response.status);
        if (response.status === 503) retryAfter = response.headers.get('retry-after');
      }
      await sleep(5000);
    }
    await proxy.heal();
    console.log(`      found during the outage: HTTP ${[...new Set(answers)].join(', ')} (${answers.length} requests)`);
    expect(answers.every((status) => status === 503)).to.equal(true);
    expect(retryAfter).to.match(/^[0-9]+$/);

    // The workflow is still running: its re-reads retried through the whole outage.
    const described = await getStack()
      .runtime.temporal.client.workflow.getHandle(runWorkflowId(executionId))
      .describe();
    expect(described.status.name).to.equal('RUNNING');

    const resolved = await eventually(
      async () => {
        const response = await reviewer.post(`/v1/approvals/${approvalId}/resolve`, { decision: 'APPROVED' });
        return response.status === 503 ? undefined : response;
      },
      { what: 'the API to serve again', timeoutMs: 30_000, intervalMs: 500 },
    );
    expect(resolved.status).to.equal(200);
    const healed = Date.now();
    const run = await succeeded(client, executionId, OUTAGE_WAIT);
    console.log(
      `      found after healing: run SUCCEEDED ${((Date.now() - healed) / 1000).toFixed(1)} s after the resolve`,
    );
    expect(run.steps.map((step: any) => step.status)).to.deep.equal(['SUCCEEDED', 'SUCCEEDED']);
    const sessions = await getStack().ownerDataSource.query(
      `SELECT count(*)::int AS n FROM agent_sessions WHERE workspace_id = $1`,
      [tenant.workspace_id],
    );
    expect(sessions[0].n).to.equal(1);
    expect((await client.get(`/v1/runs/${executionId}/audit`)).body.valid).to.equal(true);
  });
});
