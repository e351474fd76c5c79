import { proxyActivities } from '@temporalio/workflow';
import type { Activities } from '../activities';
import type { DeliveryRetentionInput } from '../src/triggers/workflow';
import { maintenanceActivity } from './activity-options';

const { sweepWebhookDeliveries } = proxyActivities<Activities>(maintenanceActivity);

/** Scheduled daily: deletes webhook delivery records past the 30-day retention. */
export async function webhookDeliveryRetentionWorkflow(input: DeliveryRetentionInput): Promise<{ deleted: number }> {
  return sweepWebhookDeliveries(input);
}
