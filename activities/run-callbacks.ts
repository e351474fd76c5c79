import type { RunCallbackService } from '../src/run-callbacks/service';

/** Run callbacks' one step: a thin adapter over the service's attempt. */
export function createRunCallbackActivities(deps: { services: { runCallbacks: RunCallbackService } }) {
  return {
    attemptRunCallback: (workspaceId: string, deliveryId: string, series: number) =>
      deps.services.runCallbacks.attempt(workspaceId, deliveryId, series),
  };
}
