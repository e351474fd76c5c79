import type { Config } from '../platform/config';
import { createSealer } from '../platform/crypto/sealer';
import type { UnitOfWork } from '../platform/db/unit-of-work';
import type { Logger } from '../platform/logger';
import type { OutboxRelay } from '../platform/outbox/relay';
import type { TemporalHandle } from '../platform/temporal/connection';
import type { MaintenanceSchedule } from '../platform/temporal/schedules';
import { addressPolicy } from './address-guard';
import { runCallbackQueued } from './events';
import type { CallbackBodyFormat } from './formats';
import { startRunCallback } from './outbox-handler';
import { createCallbackRetention } from './retention';
import { runCallbackRoutes } from './routes';
import { createCallbackSender } from './sender';
import type { RunCallbackService } from './service';
import { createRunCallbackService } from './service';
import { runCallbackRetentionWorkflow } from './workflow';

type CallbackConfig = Pick<
  Config,
  | 'WEFT_ENCRYPTION_KEY'
  | 'RUN_CALLBACK_ALLOW_PRIVATE'
  | 'RUN_CALLBACK_ALLOWED_CIDRS'
  | 'RUN_CALLBACK_RETRY_BASE_SECONDS'
  | 'RUN_CALLBACK_RETRY_MAX_SECONDS'
>;

/** Signed completion callbacks of runs (issue 26 part 2): subscriptions, deliveries, attempts. */
export const runCallbacksFeature = {
  name: 'run-callbacks',
  services: {
    /** Subscriptions, deliveries, and the delivery workflow's attempt; signs with per-callback secrets. */
    runCallbacks: (ctx: {
      uow: UnitOfWork;
      outbox: OutboxRelay;
      logger: Logger;
      config: CallbackConfig;
      // A2A push notifications' bodies, from the a2a feature (which depends on this one, not the reverse).
      services: { a2aPushFormat: CallbackBodyFormat };
    }) => {
      // The SSRF guard's policy: the sender checks it at connect time, the service at creation.
      const policy = addressPolicy(ctx.config.RUN_CALLBACK_ALLOW_PRIVATE, ctx.config.RUN_CALLBACK_ALLOWED_CIDRS);
      return createRunCallbackService({
        uow: ctx.uow,
        sealer: createSealer(ctx.config.WEFT_ENCRYPTION_KEY, 'weft-run-callback-secret-v1'),
        send: createCallbackSender(policy),
        policy,
        outbox: ctx.outbox,
        retry: {
          baseSeconds: ctx.config.RUN_CALLBACK_RETRY_BASE_SECONDS,
          maxSeconds: ctx.config.RUN_CALLBACK_RETRY_MAX_SECONDS,
        },
        logger: ctx.logger,
        formats: { a2a: ctx.services.a2aPushFormat },
      });
    },
    /** Deletes settled run callback deliveries past retention (the retention schedule). */
    callbackRetention: (ctx: { uow: UnitOfWork }) => createCallbackRetention({ uow: ctx.uow }),
  },
  tags: {
    'run-callbacks': 'Signed callbacks of run events (finished, approval requested) to your URL.',
  },
  routes: (runtime: { services: { runCallbacks: RunCallbackService } }) =>
    runCallbackRoutes(runtime.services.runCallbacks),
  events: [runCallbackQueued],
  // A queued delivery (or redelivery): start its workflow.
  outboxHandlers: (temporal: TemporalHandle) => [startRunCallback(temporal)],
  schedules: [
    {
      name: 'run-callback-retention',
      description: 'Daily: deletes settled run callback deliveries older than 30 days, in batches.',
      workflow: runCallbackRetentionWorkflow,
      args: [{}],
      spec: { intervals: [{ every: '1 day', offset: '5 hours' }] },
    },
  ] satisfies MaintenanceSchedule[],
};
