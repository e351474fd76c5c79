import { proxyActivities, sleep } from '@temporalio/workflow';
import type { Activities } from '../activities';
import type { CallbackRetentionInput, RunCallbackWorkflowInput } from '../src/run-callbacks/workflow';
import { maintenanceActivity } from './activity-options';

// An attempt is one POST (at most 10 s) between two short transactions; its own failures are
// recorded, not thrown, so what the activity retries is the database alone.
const { attemptRunCallback } = proxyActivities<Activities>({
  startToCloseTimeout: '1 minute',
  retry: { initialInterval: '1s', backoffCoefficient: 2, maximumInterval: '30s' },
});

/**
 * One delivery series of a run callback: attempt, and wait what the attempt says before the next,
 * until it is delivered, fails for good or is stopped. The backoff and the 24-hour window are the
 * service's (each wait is in the attempt's recorded result), so the workflow stays deterministic.
 */
export async function runCallbackWorkflow(input: RunCallbackWorkflowInput): Promise<{ status: string }> {
  for (;;) {
    const result = await attemptRunCallback(input.workspaceId, input.deliveryId, input.series);
    if ('status' in result) return { status: result.status };
    await sleep(result.retryInMs);
  }
}

const { sweepRunCallbackDeliveries } = proxyActivities<Activities>(maintenanceActivity);

/** Scheduled daily: deletes settled run callback deliveries past the 30-day retention. */
export async function runCallbackRetentionWorkflow(input: CallbackRetentionInput): Promise<{ deleted: number }> {
  return sweepRunCallbackDeliveries(input);
}
