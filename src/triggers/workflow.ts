import { defineWorkflow } from '../platform/temporal/contract';

export interface DeliveryRetentionInput {
  /** Records deleted per transaction (default LIMITS.webhook.retentionBatch). */
  batchSize?: number;
}

/** Daily (a schedule): deletes webhook delivery records older than 30 days, in every workspace. */
export const webhookDeliveryRetentionWorkflow = defineWorkflow<[DeliveryRetentionInput], { deleted: number }>({
  type: 'webhookDeliveryRetentionWorkflow',
  id: () => 'webhook-delivery-retention',
  summary: () => 'Delete webhook delivery records past retention',
});
