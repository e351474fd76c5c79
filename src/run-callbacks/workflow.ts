import { defineWorkflow } from '../platform/temporal/contract';

export interface RunCallbackWorkflowInput {
  workspaceId: string;
  deliveryId: string;
  /** 0 for the first delivery, then one more per redelivery: each series is its own workflow. */
  series: number;
}

/** What one attempt answers the workflow: wait this long and try again, or stop with the delivery's status. */
export type RunCallbackAttemptResult = { retryInMs: number } | { status: 'delivered' | 'failed' | 'stopped' };

/**
 * One delivery series of a callback (`run-callback-<delivery_id>-<series>`): attempts with
 * exponential backoff until one succeeds or the retry window ends. Started from the
 * `run_callback.queued` event; a second start under the id is refused, even after it closed.
 */
export const runCallbackWorkflow = defineWorkflow<[RunCallbackWorkflowInput], { status: string }>({
  type: 'runCallbackWorkflow',
  id: (input) => `run-callback-${input.deliveryId}-${input.series}`,
  workspaceId: (input) => input.workspaceId,
  idReusePolicy: 'REJECT_DUPLICATE',
  summary: (input) => `Run callback delivery ${input.deliveryId} (series ${input.series})`,
});

export interface CallbackRetentionInput {
  /** Deliveries deleted per transaction (default LIMITS.runCallbacks.retentionBatch). */
  batchSize?: number;
}

/** Daily (a schedule): deletes settled run callback deliveries older than 30 days, in every workspace. */
export const runCallbackRetentionWorkflow = defineWorkflow<[CallbackRetentionInput], { deleted: number }>({
  type: 'runCallbackRetentionWorkflow',
  id: () => 'run-callback-retention',
  summary: () => 'Delete run callback deliveries past retention',
});
