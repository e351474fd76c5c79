import { expect } from 'chai';
import { importanceDecayWorkflow } from '../src/importance/workflow';
import { getStack } from './helpers/stack';

// The sweep handles this many batches per run before it continues as new (workflows/graph-maintenance.ts).
const BATCHES_PER_RUN = 200;

describe('maintenance: a workspace sweep continues as new', function () {
  this.timeout(180_000);

  const owner = () => getStack().ownerDataSource;
  let tenantId: string | undefined;

  after(async () => {
    if (!tenantId) return;
    await owner().query(`DELETE FROM workspaces WHERE tenant_id = $1`, [tenantId]);
    await owner().query(`DELETE FROM tenants WHERE id = $1`, [tenantId]);
  });

  it('visits every workspace across runs when one run’s batches do not cover them all', async () => {
    // With one workspace per batch, more workspaces than batches per run force a second run.
    const [{ count }] = await owner().query(`SELECT count(*)::int AS count FROM workspaces`);
    const missing = Math.max(0, BATCHES_PER_RUN + 5 - count);
    const [tenant] = await owner().query(`INSERT INTO tenants (name) VALUES ('sweep fixture') RETURNING id`);
    tenantId = tenant.id;
    await owner().query(
      `INSERT INTO workspaces (tenant_id, name) SELECT $1, 'sweep ' || g FROM generate_series(1, $2) g`,
      [tenantId, missing],
    );
    const [{ total }] = await owner().query(`SELECT count(*)::int AS total FROM workspaces`);
    expect(total).to.be.greaterThan(BATCHES_PER_RUN);

    const { runtime, config } = getStack();
    const handle = await runtime.temporal.client.workflow.start(importanceDecayWorkflow.type, {
      taskQueue: config.TEMPORAL_TASK_QUEUE,
      workflowId: `test-sweep-continue-as-new-${Date.now()}`,
      args: [{ batchSize: 1 }],
    });
    // The result follows the chain of runs: the last one handled what the first left over.
    const result = await handle.result();
    expect(result).to.deep.equal({ workspaces: total - BATCHES_PER_RUN, failed: 0 });

    const first = await runtime.temporal.client.workflow.getHandle(handle.workflowId, handle.firstExecutionRunId);
    expect((await first.describe()).status.name).to.equal('CONTINUED_AS_NEW');
    const { events } = await first.fetchHistory();
    const batches = (events ?? []).filter((event) => event.activityTaskScheduledEventAttributes);
    expect(batches).to.have.length(BATCHES_PER_RUN);
    const continued = (events ?? []).find((event) => event.workflowExecutionContinuedAsNewEventAttributes);
    expect(continued?.workflowExecutionContinuedAsNewEventAttributes?.input?.payloads).to.have.length(1);
    expect((await handle.describe()).status.name).to.equal('COMPLETED');
  });
});
