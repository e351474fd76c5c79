import type { OutboxHandler } from '../platform/outbox/relay';
import { onEvent } from '../platform/outbox/relay';
import type { TemporalHandle } from '../platform/temporal/connection';
import { runDispatched, runStartInput } from './events';
import { runWorkflow } from './workflow';

/**
 * `run.dispatched` → the run's workflow `run-<execution_id>`. The id is derived from the event and
 * a second start is refused (the contract's REJECT_DUPLICATE), so redelivery starts nothing new,
 * nor does this delivery when the API already started the run right after its commit.
 */
export const startRun = (temporal: TemporalHandle): OutboxHandler<typeof runDispatched> =>
  onEvent(runDispatched, async (event) => {
    await temporal.workflows.start(runWorkflow, runStartInput(event.workspace_id, event.payload));
  });
