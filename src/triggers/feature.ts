import type { MaintenanceSchedule } from '../platform/temporal/schedules';
import { WebhookDelivery, WebhookTrigger } from './entities';
import type { TriggerIntake } from './intake';
import { triggerRoutes } from './routes';
import type { TriggerService } from './service';
import { webhookDeliveryRetentionWorkflow } from './workflow';

/** Signed inbound webhooks that start runs, and their delivery records' retention. */
export const triggersFeature = {
  name: 'triggers',
  tags: {
    triggers: 'Signed inbound webhooks that start runs.',
  },
  entities: [WebhookTrigger, WebhookDelivery],
  routes: (runtime: { services: { triggers: TriggerService; triggerIntake: TriggerIntake } }) =>
    triggerRoutes(runtime.services.triggers, runtime.services.triggerIntake),
  schedules: [
    {
      name: 'webhook-delivery-retention',
      description: 'Daily: deletes webhook delivery records older than 30 days, in batches.',
      workflow: webhookDeliveryRetentionWorkflow,
      args: [{}],
      spec: { intervals: [{ every: '1 day', offset: '4 hours' }] },
    },
  ] satisfies MaintenanceSchedule[],
};
