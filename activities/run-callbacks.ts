import { heartbeat } from '@temporalio/activity';
import type { CallbackRetention } from '../src/run-callbacks/retention';
import type { RunCallbackService } from '../src/run-callbacks/service';
import type { CallbackRetentionInput } from '../src/run-callbacks/workflow';

/** Run callbacks' steps: thin adapters over the service's attempt and the retention sweep. */
export function createRunCallbackActivities(deps: {
  services: { runCallbacks: RunCallbackService; callbackRetention: CallbackRetention };
}) {
  return {
    attemptRunCallback: (workspaceId: string, deliveryId: string, series: number) =>
      deps.services.runCallbacks.attempt(workspaceId, deliveryId, series),
    /** Deletes settled deliveries older than the retention, batch by batch. */
    sweepRunCallbackDeliveries: (input: CallbackRetentionInput) =>
      deps.services.callbackRetention.sweep(input.batchSize, () => heartbeat()),
  };
}
