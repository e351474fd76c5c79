import { randomUUID } from 'node:crypto';
import { ScheduleNotFoundError } from '@temporalio/client';
import { expect } from 'chai';
import {
  deleteMaintenanceSchedules,
  ensureMaintenanceSchedules,
  MAINTENANCE_SCHEDULES,
  scheduleId,
} from '../src/app/schedules';
import { enqueueEvent } from '../src/platform/outbox/relay';
import { WORKSPACE_ID_ATTRIBUTE, workspaceSearchAttributes } from '../src/platform/temporal/search-attributes';
import { decisionRecorded } from '../src/runs/events';
import { eventually } from './helpers/eventually';
import { getStack } from './helpers/stack';
import { OPERATOR_TEMPORAL_ADDRESS, suiteTemporal } from './helpers/temporal-server';
import { newTenant } from './helpers/tenants';

describe('Temporal plumbing', () => {
  it('runs the suite on a Temporal server of its own, never the one at TEMPORAL_ADDRESS', async function () {
    if (process.env.WEFT_TEST_TEMPORAL_ADDRESS) this.skip();
    const suite = await suiteTemporal();
    expect(suite.own).to.equal(true);
    expect(getStack().config.TEMPORAL_ADDRESS).to.equal(suite.address).and.not.equal(OPERATOR_TEMPORAL_ADDRESS);
    // What the suite spawns (the durability test's worker process) inherits this environment.
    expect(process.env.TEMPORAL_ADDRESS).to.equal(suite.address);
    expect(process.env.TEMPORAL_NAMESPACE).to.equal('default');
  });

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

  it("deletes a task queue's schedules, twice without harm", async () => {
    const { client } = getStack().runtime.temporal;
    const taskQueue = `weft-test-cleanup-${randomUUID().slice(0, 8)}`;
    await ensureMaintenanceSchedules(client, taskQueue, { paused: true });
    await deleteMaintenanceSchedules(client, taskQueue);
    await deleteMaintenanceSchedules(client, taskQueue);
    for (const schedule of MAINTENANCE_SCHEDULES) {
      const describe = client.schedule.getHandle(scheduleId(taskQueue, schedule)).describe();
      await describe.then(
        () => expect.fail(`${schedule.name} is still there`),
        (error) => expect(error).to.be.instanceOf(ScheduleNotFoundError),
      );
    }
  });

  it('schedules every safety net: sweeps, reconciles, catalog, decay, purges, retentions, communities', () => {
    expect(MAINTENANCE_SCHEDULES.map((schedule) => schedule.name)).to.have.members([
      'outbox-sweep',
      'prompt-reconcile',
      'run-reconcile',
      'type-catalog-refresh',
      'importance-decay',
      'credits-reconcile',
      'embedding-backfill',
      'agent-session-sweep',
      'capability-key-purge',
      'webhook-delivery-retention',
      'run-callback-retention',
      'community-refresh',
      'graph-version-retention',
    ]);
  });

  it('runs the run reconciler through its workflow on the worker, and it says what it did', async () => {
    const { runtime, config } = getStack();
    // Only runs untouched for a year are candidates: this pass must leave the suite's runs alone.
    const result = await runtime.temporal.client.workflow.execute('runReconcileWorkflow', {
      args: [{ minAgeSeconds: 365 * 24 * 3600 }],
      taskQueue: config.TEMPORAL_TASK_QUEUE,
      workflowId: `run-reconcile-test-${randomUUID()}`,
    });
    expect(result).to.deep.equal({
      checked: 0,
      running: 0,
      resumed: 0,
      settled: 0,
      failed: 0,
      resumedIds: [],
      settledIds: [],
    });
  });

  it('delivers an outbox event through the sweep workflow, end to end on the worker', async () => {
    const { runtime, config } = getStack();
    const tenant = await newTenant();
    const aggregateId = randomUUID();
    await runtime.uow({ workspaceId: tenant.workspace_id }, (m) =>
      // A known event that nothing handles: delivered as soon as it is read.
      enqueueEvent(m, decisionRecorded, {
        workspaceId: tenant.workspace_id,
        aggregateId,
        payload: { execution_id: aggregateId, step_id: randomUUID(), supersedes_step_id: null },
      }),
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
