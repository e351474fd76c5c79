import type { TemporalHandle } from '../platform/temporal/connection';
import type { MaintenanceSchedule } from '../platform/temporal/schedules';
import { runCallbackQueued } from './events';
import { startRunCallback } from './outbox-handler';
import { runCallbackRoutes } from './routes';
import type { RunCallbackService } from './service';
import { runCallbackRetentionWorkflow } from './workflow';

/** Signed completion callbacks of runs (issue 26 part 2): subscriptions, deliveries, attempts. */
export const runCallbacksFeature = {
  name: 'run-callbacks',
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
