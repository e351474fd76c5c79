import type { OutboxHandler } from '../platform/outbox/relay';
import { onEvent } from '../platform/outbox/relay';
import type { TemporalHandle } from '../platform/temporal/connection';
import { sessionFailed } from './events';
import { failureClusterWorkflow } from './workflow';

/**
 * `agent.session_failed` → the clustering workflow (`failure-cluster-<session_id>`). The id comes
 * from the session, and the workflow counts a session once, so redelivery is harmless.
 */
export const startFailureClustering = (temporal: TemporalHandle): OutboxHandler<typeof sessionFailed> =>
  onEvent(sessionFailed, async (event) => {
    await temporal.workflows.start(failureClusterWorkflow, {
      workspaceId: event.workspace_id,
      sessionId: event.payload.session_id,
    });
  });
