import { proxyActivities } from '@temporalio/workflow';
import type { Activities } from '../activities';
import { maintenanceActivity } from './activity-options';

const { sweepOutbox, settleAbandonedPrompts } = proxyActivities<Activities>(maintenanceActivity);

/** Scheduled every minute: the outbox safety net. Rows younger than `minAgeSeconds` belong to the fast path. */
export async function outboxSweepWorkflow(input: { minAgeSeconds: number }) {
  return sweepOutbox(input);
}

/** Scheduled every ten minutes: settles the reservations of prompts that ended without compensation. */
export async function promptReconcileWorkflow(input: { minAgeSeconds: number }) {
  return settleAbandonedPrompts(input);
}
