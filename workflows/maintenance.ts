import { proxyActivities } from '@temporalio/workflow';
import type { Activities } from '../activities';
import { maintenanceActivity } from './activity-options';

const { sweepOutbox } = proxyActivities<Activities>(maintenanceActivity);

/** Scheduled every minute: the outbox safety net. Rows younger than `minAgeSeconds` belong to the fast path. */
export async function outboxSweepWorkflow(input: { minAgeSeconds: number }) {
  return sweepOutbox(input);
}
