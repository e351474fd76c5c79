import type { TemporalHandle } from '../platform/temporal/connection';
import { runCallbackQueued } from './events';
import { startRunCallback } from './outbox-handler';
import { runCallbackRoutes } from './routes';
import type { RunCallbackService } from './service';

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
};
