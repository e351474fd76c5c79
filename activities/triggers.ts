import { heartbeat } from '@temporalio/activity';
import type { DeliveryRetention } from '../src/triggers/retention';
import type { DeliveryRetentionInput } from '../src/triggers/workflow';

/** The webhook triggers' maintenance step: a thin adapter over the retention sweep. */
export function createTriggerActivities(deps: { services: { deliveryRetention: DeliveryRetention } }) {
  return {
    /** Deletes delivery records older than the retention, batch by batch. */
    sweepWebhookDeliveries: (input: DeliveryRetentionInput) =>
      deps.services.deliveryRetention.sweep(input.batchSize, () => heartbeat()),
  };
}
