import { randomUUID } from 'node:crypto';
import { expect } from 'chai';
import { deleteMaintenanceSchedules } from '../src/app/schedules';
import { eventually } from './helpers/eventually';
import { as } from './helpers/http';
import { succeeded } from './helpers/runs';
import { getStack } from './helpers/stack';
import { newTenant } from './helpers/tenants';
import type { FileTemporal, WeftProcess } from './helpers/weft-process';
import { fileTemporal, startApiProcess, startWorkerProcess } from './helpers/weft-process';

// Issue 43 item 2: throttled and debounced runs survive a worker and an API killed while they wait.

// A restarted worker first waits out its dead predecessor's sticky queue (about 10 s).
const RESTARTED = { timeoutMs: 60_000, intervalMs: 250 };

const quick = (flow: Record<string, unknown>, params: Record<string, unknown>) => ({
  agent: 'playbook',
  input: { steps: [{ tool: 'billing.credits_balance', input: {} }], params },
  flow,
});

const owner = () => getStack().ownerDataSource;

describe('runs flow durability: worker and API killed while runs are throttled and debounced', function () {
  this.timeout(180_000);
  const taskQueue = `weft-durability-flow-${randomUUID().slice(0, 8)}`;
  let temporal: FileTemporal;
  let api: WeftProcess | undefined;
  let worker: WeftProcess | undefined;
  const env = () => ({ TEMPORAL_ADDRESS: temporal.address, TEMPORAL_TASK_QUEUE: taskQueue });

  async function startApi() {
    api = await startApiProcess(env());
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

  it('SIGKILL of the worker and the API: every held run starts once, in order, within its throttle', async () => {
    const tenant = await newTenant();
    const client = () => as(tenant.api_key, api!.baseUrl);
    const period = 3;
    const throttle = { key: 'sync', limit: 2, period_seconds: period };
    const throttled: string[] = [];
    for (let i = 0; i < 6; i++) {
      const answer = await client().post('/v1/runs', quick({ throttle }, { i }));
      expect(answer.status, answer.text).to.equal(202);
      throttled.push(answer.body.execution_id);
    }
    const debounce = { key: 'doc', period_seconds: period };
    let debounced = '';
    for (let n = 0; n < 3; n++) {
      const answer = await client().post('/v1/runs', quick({ debounce }, { n }));
      expect(answer.status, answer.text).to.equal(202);
      debounced = answer.body.execution_id;
    }
    // Their timers exist in Temporal before the kill (the outbox started them).
    const handle = (await temporal.client()).workflow.getHandle(`run-flow-${debounced}`);
    await eventually(
      () =>
        handle.describe().then(
          () => true,
          () => false,
        ),
      { what: 'the debounce timer' },
    );

    await worker!.kill();
    await api!.kill();
    const [{ held }] = await owner().query(
      `SELECT count(*)::int AS held FROM run_executions WHERE workspace_id = $1 AND held_start IS NOT NULL`,
      [tenant.workspace_id],
    );
    expect(held, 'runs still held when the worker died').to.be.greaterThan(0);
    await startApi();
    worker = startWorkerProcess(env());

    for (const id of throttled) await succeeded(client(), id, RESTARTED);
    const run = await succeeded(client(), debounced, RESTARTED);
    expect(run.input.params).to.deep.equal({ n: 2 });
    const starts = (await owner().query(
      `SELECT DISTINCT ON (execution_id) execution_id, created_at, seq FROM run_events
        WHERE execution_id = ANY($1) AND type = 'run.status' AND data->>'status' = 'QUEUED'
          AND data->>'queued_reason' IS NULL
        ORDER BY execution_id, seq`,
      [throttled],
    )) as { execution_id: string; created_at: Date; seq: string }[];
    starts.sort((a, b) => Number(a.seq) - Number(b.seq));
    expect(starts.map((s) => s.execution_id)).to.deep.equal(throttled);
    const at = starts.map((s) => s.created_at.getTime());
    for (let i = 0; i + 2 < at.length; i++) expect(at[i + 2]! - at[i]!).to.be.at.least(period * 1000);
    // Each started once: one step each, one run for the three debounced dispatches.
    const [{ runs, steps }] = await owner().query(
      `SELECT count(DISTINCT e.id)::int AS runs, count(s.id)::int AS steps FROM run_executions e
         JOIN run_steps s ON s.execution_id = e.id WHERE e.workspace_id = $1`,
      [tenant.workspace_id],
    );
    expect({ runs, steps }).to.deep.equal({ runs: 7, steps: 7 });
  });
});
