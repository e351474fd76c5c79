import { randomUUID } from 'node:crypto';
import { expect } from 'chai';
import { ensureMaintenanceSchedules, MAINTENANCE_SCHEDULES, scheduleId } from '../src/maintenance/schedules';
import { enqueueOutboxEvent } from '../src/platform/outbox/relay';
import { WORKSPACE_ID_ATTRIBUTE, workspaceSearchAttributes } from '../src/platform/temporal/search-attributes';
import { eventually } from './helpers/eventually';
import { getStack } from './helpers/stack';
import { newTenant } from './helpers/tenants';

describe('Temporal plumbing', () => {
  it('registers the WeftWorkspaceId search attribute', async () => {
    const { connection, namespace } = getStack().runtime.temporal;
    const attributes = await connection.operatorService.listSearchAttributes({ namespace });
    expect(attributes.customAttributes).to.have.property(WORKSPACE_ID_ATTRIBUTE.name);
  });

  it('registers every maintenance schedule, idempotently, visible to operators', async () => {
    const { client } = getStack().runtime.temporal;
    const taskQueue = getStack().config.TEMPORAL_TASK_QUEUE;
    // A second start (say, a restarted `npm start`) updates instead of failing.
    expect(await ensureMaintenanceSchedules(client, taskQueue)).to.have.length(MAINTENANCE_SCHEDULES.length);
    for (const schedule of MAINTENANCE_SCHEDULES) {
      const description = await client.schedule.getHandle(scheduleId(taskQueue, schedule)).describe();
      expect(description.action.type).to.equal('startWorkflow');
      expect(description.action.workflowType).to.equal(schedule.workflow.type);
      expect(description.action.taskQueue).to.equal(taskQueue);
    }
  });

  it('schedules every safety net: outbox sweep, prompt and credit reconciles, embedding backfill, catalog, decay', () => {
    expect(MAINTENANCE_SCHEDULES.map((schedule) => schedule.name)).to.have.members([
      'outbox-sweep',
      'prompt-reconcile',
      'type-catalog-refresh',
      'importance-decay',
      'credits-reconcile',
      'embedding-backfill',
    ]);
  });

  it('delivers an outbox event through the sweep workflow, end to end on the worker', async () => {
    const { runtime, config } = getStack();
    const tenant = await newTenant();
    const aggregateId = randomUUID();
    await runtime.uow({ workspaceId: tenant.workspace_id }, (m) =>
      enqueueOutboxEvent(m, { workspaceId: tenant.workspace_id, eventType: 'test.nothing_listens', aggregateId }),
    );
    const workflowId = `outbox-sweep-test-${randomUUID()}`;
    const result = await runtime.temporal.client.workflow.execute('outboxSweepWorkflow', {
      args: [{ minAgeSeconds: 0 }],
      taskQueue: config.TEMPORAL_TASK_QUEUE,
      workflowId,
      typedSearchAttributes: workspaceSearchAttributes(tenant.workspace_id),
    });
    expect(result.dispatched).to.be.greaterThan(0);
    const [row] = await getStack().ownerDataSource.query(
      `SELECT dispatched_at, attempts FROM outbox WHERE aggregate_id = $1`,
      [aggregateId],
    );
    expect(row.dispatched_at).to.be.instanceOf(Date);
    expect(row.attempts).to.equal(1);

    // Operators find the execution by workspace.
    const description = await runtime.temporal.client.workflow.getHandle(workflowId).describe();
    expect(description.typedSearchAttributes.get(WORKSPACE_ID_ATTRIBUTE)).to.equal(tenant.workspace_id);
  });

  it('a triggered schedule runs its workflow to completion', async function () {
    this.timeout(30_000);
    const { client } = getStack().runtime.temporal;
    const id = scheduleId(getStack().config.TEMPORAL_TASK_QUEUE, { name: 'outbox-sweep' });
    const handle = client.schedule.getHandle(id);
    const before = (await handle.describe()).info.recentActions.length;
    await handle.trigger();
    const completed = await eventually(
      async () => {
        const { info } = await handle.describe();
        const latest = info.recentActions.at(-1);
        if (info.recentActions.length <= before || !latest) return false;
        const { workflowId, firstExecutionRunId } = latest.action.workflow;
        return (
          (await client.workflow.getHandle(workflowId, firstExecutionRunId).describe()).status.name === 'COMPLETED'
        );
      },
      { what: 'the triggered run to complete', timeoutMs: 20_000, intervalMs: 200 },
    );
    expect(completed).to.equal(true);
  });
});
