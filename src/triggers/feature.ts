import { createFilterPool } from '../filters/pool';
import type { Config } from '../platform/config';
import type { Sealer } from '../platform/crypto/sealer';
import { createSealer } from '../platform/crypto/sealer';
import type { ScopedRead, Statement, UnitOfWork } from '../platform/db/unit-of-work';
import type { Logger } from '../platform/logger';
import type { MaintenanceSchedule } from '../platform/temporal/schedules';
import type { RunService } from '../runs/service';
import { WebhookDelivery, WebhookTrigger } from './entities';
import type { TriggerIntake } from './intake';
import { createTriggerIntake } from './intake';
import type { IntakeLimiter } from './intake-limiter';
import { createIntakeLimiter } from './intake-limiter';
import { countRefusals } from './repository';
import { createDeliveryRetention } from './retention';
import { triggerRoutes } from './routes';
import type { TriggerService } from './service';
import { createTriggerService } from './service';
import { webhookDeliveryRetentionWorkflow } from './workflow';

type IntakeConfig = Pick<
  Config,
  'WEBHOOK_INTAKE_PER_SOURCE' | 'WEBHOOK_INTAKE_PER_SLUG' | 'WEBHOOK_REDELIVERIES_PER_TRIGGER'
>;

/** What management and the intake share (one sealer, one set of limits), and the runs they start. */
interface TriggerServices {
  triggerSealer: Sealer;
  triggerLimiter: IntakeLimiter;
  runs: RunService;
}

/** Signed inbound webhooks that start runs, and their delivery records' retention. */
export const triggersFeature = {
  name: 'triggers',
  services: {
    /** Seals and opens triggers' secrets at rest: management seals, the intake opens. */
    triggerSealer: (ctx: { config: Pick<Config, 'WEFT_ENCRYPTION_KEY'> }) =>
      createSealer(ctx.config.WEFT_ENCRYPTION_KEY, 'weft-trigger-secret-v1'),
    /** The intake's per-source and per-slug limits and redelivery's per trigger: one set for both. */
    triggerLimiter: (ctx: { statement: Statement; logger: Logger; config: IntakeConfig }) =>
      createIntakeLimiter({
        rates: {
          perSource: ctx.config.WEBHOOK_INTAKE_PER_SOURCE,
          perSlug: ctx.config.WEBHOOK_INTAKE_PER_SLUG,
          redeliveriesPerTrigger: ctx.config.WEBHOOK_REDELIVERIES_PER_TRIGGER,
        },
        countRefusals: (counts) => countRefusals(ctx.statement, counts),
        logger: ctx.logger,
      }),
    /** Webhook triggers: management (issue 13). */
    triggers: (ctx: { uow: UnitOfWork; logger: Logger; services: TriggerServices }) =>
      createTriggerService({
        uow: ctx.uow,
        sealer: ctx.services.triggerSealer,
        runs: ctx.services.runs,
        limiter: ctx.services.triggerLimiter,
        logger: ctx.logger,
      }),
    /** The signed webhook intake: limits, verification, filter, delivery record, dispatch. */
    triggerIntake: (ctx: {
      uow: UnitOfWork;
      read: ScopedRead;
      statement: Statement;
      logger: Logger;
      services: TriggerServices;
      onClose: (hook: () => Promise<void>) => void;
    }) => {
      const filters = createFilterPool();
      ctx.onClose(() => filters.close());
      return createTriggerIntake({
        uow: ctx.uow,
        read: ctx.read,
        statement: ctx.statement,
        sealer: ctx.services.triggerSealer,
        runs: ctx.services.runs,
        filters,
        limiter: ctx.services.triggerLimiter,
        logger: ctx.logger,
      });
    },
    /** Deletes webhook delivery records past retention (the retention schedule). */
    deliveryRetention: (ctx: { uow: UnitOfWork }) => createDeliveryRetention({ uow: ctx.uow }),
  },
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
