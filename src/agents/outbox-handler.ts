import type { OutboxHandler } from '../platform/outbox/relay';
import type { TemporalHandle } from '../platform/temporal/connection';
import { failureClusterWorkflow } from './workflow';

/**
 * `agent.session_failed` → the clustering workflow (`failure-cluster-<session_id>`). The id comes
 * from the session, and the workflow counts a session once, so redelivery is harmless.
 */
export const startFailureClustering =
  (temporal: TemporalHandle): OutboxHandler =>
  async (event) => {
    const sessionId = typeof event.payload.session_id === 'string' ? event.payload.session_id : event.aggregate_id;
    await temporal.workflows.start(failureClusterWorkflow, { workspaceId: event.workspace_id, sessionId });
  };
