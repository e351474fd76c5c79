import type { OutboxHandler } from '../platform/outbox/relay';
import { onEvent } from '../platform/outbox/relay';
import type { TemporalHandle } from '../platform/temporal/connection';
import { runCallbackQueued } from './events';
import { runCallbackWorkflow } from './workflow';

/** `run_callback.queued` → the delivery's workflow; a repeated event meets the id already taken and starts nothing. */
export const startRunCallback = (temporal: TemporalHandle): OutboxHandler<typeof runCallbackQueued> =>
  onEvent(runCallbackQueued, async (event) => {
    await temporal.workflows.start(runCallbackWorkflow, {
      workspaceId: event.workspace_id,
      deliveryId: event.payload.delivery_id,
      series: event.payload.series,
    });
  });
