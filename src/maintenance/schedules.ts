import type { Client, ScheduleOptions } from '@temporalio/client';
import { ScheduleAlreadyRunning, ScheduleNotFoundError, ScheduleOverlapPolicy } from '@temporalio/client';
import { agentSessionSweepWorkflow } from '../agents/workflow';
import { capabilityKeyPurgeWorkflow } from '../capabilities/workflow';
import { creditsReconcileWorkflow } from '../credits/workflow';
import { embeddingBackfillWorkflow } from '../embeddings/workflow';
import type { WorkflowContract } from '../platform/temporal/contract';
import { webhookDeliveryRetentionWorkflow } from '../triggers/workflow';
import {
  importanceDecayWorkflow,
  outboxSweepWorkflow,
  promptReconcileWorkflow,
  runReconcileWorkflow,
  typeCatalogRefreshWorkflow,
} from './workflows';

export interface MaintenanceSchedule {
  /** Suffix of the schedule id; the full id is `<task queue>.<name>`, so test runs never collide. */
  name: string;
  description: string;
  workflow: WorkflowContract<any, unknown>;
  args: unknown[];
  spec: ScheduleOptions['spec'];
}

/** Every recurring job Weft runs. Later features append their schedules here. */
export const MAINTENANCE_SCHEDULES: MaintenanceSchedule[] = [
  {
    name: 'outbox-sweep',
    description: 'Delivers outbox events older than 30 s that the API did not hand off.',
    workflow: outboxSweepWorkflow,
    args: [{ minAgeSeconds: 30 }],
    spec: { intervals: [{ every: '1 minute' }] },
  },
  {
    name: 'prompt-reconcile',
    description: 'Refunds and undoes prompts whose workflow was terminated or timed out before its compensation ran.',
    workflow: promptReconcileWorkflow,
    args: [{ minAgeSeconds: 300 }],
    spec: { intervals: [{ every: '10 minutes' }] },
  },
  {
    name: 'run-reconcile',
    description:
      'Resumes runs (QUEUED, RUNNING, AWAITING_APPROVAL, untouched for 2 minutes) whose workflow closed or never ' +
      'started; settles FAILED a run whose resumed workflow closed unfinished too, CANCELLED one cancelled in ' +
      'Temporal.',
    workflow: runReconcileWorkflow,
    args: [{ minAgeSeconds: 120 }],
    spec: { intervals: [{ every: '5 minutes' }] },
  },
  {
    name: 'type-catalog-refresh',
    description:
      'Daily: recomputes every workspace’s type catalog (counts, keys, vanished types) and writes type_stats_refresh.',
    workflow: typeCatalogRefreshWorkflow,
    args: [{}],
    spec: { intervals: [{ every: '1 day', offset: '3 hours' }] },
  },
  {
    name: 'importance-decay',
    description: 'Nightly: recomputes every live node’s importance with its workspace’s decay settings.',
    workflow: importanceDecayWorkflow,
    args: [{}],
    spec: { intervals: [{ every: '1 day', offset: '2 hours' }] },
  },
  {
    name: 'agent-session-sweep',
    description:
      'Every 30 s: expires agent sessions whose last heartbeat is older than AGENT_SESSION_TTL_SECONDS ' +
      'and abandons their claims.',
    workflow: agentSessionSweepWorkflow,
    args: [{}],
    spec: { intervals: [{ every: '30 seconds' }] },
  },
  {
    name: 'capability-key-purge',
    description: 'Hourly: deletes capability Idempotency-Keys older than the 24-hour replay window.',
    workflow: capabilityKeyPurgeWorkflow,
    args: [{}],
    spec: { intervals: [{ every: '1 hour' }] },
  },
  {
    name: 'credits-reconcile',
    description:
      'Refunds reservations (searches, embeddings) still pending after 15 minutes: their work died before settling.',
    workflow: creditsReconcileWorkflow,
    args: [{ minAgeSeconds: 900 }],
    spec: { intervals: [{ every: '5 minutes' }] },
  },
  {
    name: 'embedding-backfill',
    description: 'Re-queues live nodes older than 5 minutes that have no vector and no permanent embedding error.',
    workflow: embeddingBackfillWorkflow,
    args: [{ minAgeSeconds: 300 }],
    spec: { intervals: [{ every: '10 minutes' }] },
  },
  {
    name: 'webhook-delivery-retention',
    description: 'Daily: deletes webhook delivery records older than 30 days, in batches.',
    workflow: webhookDeliveryRetentionWorkflow,
    args: [{}],
    spec: { intervals: [{ every: '1 day', offset: '4 hours' }] },
  },
];

export const scheduleId = (taskQueue: string, schedule: Pick<MaintenanceSchedule, 'name'>) =>
  `${taskQueue}.${schedule.name}`;

/**
 * Creates each schedule, or updates it to the current definition when it exists. Overlap is
 * skipped and missed runs are not caught up beyond a minute: a maintenance pass that runs late
 * does the work of the ones it replaced.
 */
export async function ensureMaintenanceSchedules(
  client: Client,
  taskQueue: string,
  options: { paused?: boolean } = {},
): Promise<string[]> {
  const ids: string[] = [];
  for (const schedule of MAINTENANCE_SCHEDULES) {
    const id = scheduleId(taskQueue, schedule);
    const definition: ScheduleOptions = {
      scheduleId: id,
      spec: schedule.spec,
      action: {
        type: 'startWorkflow',
        workflowType: schedule.workflow.type,
        args: schedule.args,
        taskQueue,
        workflowId: id,
      },
      policies: { overlap: ScheduleOverlapPolicy.SKIP, catchupWindow: '1 minute' },
      state: { note: schedule.description, paused: options.paused ?? false },
    };
    try {
      await client.schedule.create(definition);
    } catch (error) {
      if (!(error instanceof ScheduleAlreadyRunning)) throw error;
      await client.schedule.getHandle(id).update((previous) => ({
        ...previous,
        spec: definition.spec,
        action: definition.action,
        policies: definition.policies,
      }));
    }
    ids.push(id);
  }
  return ids;
}

/**
 * Removes a task queue's schedules (test stacks clean up after themselves). Idempotent: a schedule
 * already gone is what was asked for.
 */
export async function deleteMaintenanceSchedules(client: Client, taskQueue: string): Promise<void> {
  for (const schedule of MAINTENANCE_SCHEDULES) {
    try {
      await client.schedule.getHandle(scheduleId(taskQueue, schedule)).delete();
    } catch (error) {
      if (!(error instanceof ScheduleNotFoundError)) throw error;
    }
  }
}
