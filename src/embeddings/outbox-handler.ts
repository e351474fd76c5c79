import type { OutboxHandler, OutboxMessage } from '../platform/outbox/relay';
import type { TemporalHandle } from '../platform/temporal/connection';
import type { EmbedRequest } from './workflow';
import { embeddingQueueWorkflow, enqueueEmbeddingSignal } from './workflow';

/**
 * node.created, and node.updated when the name changed: hand the node to its workspace's embedding
 * queue (signal-with-start, so the queue is started when idle). The request carries the event id,
 * which the queue deduplicates and the charge is keyed by, so redelivery is harmless.
 */
export const enqueueEmbedding =
  (temporal: TemporalHandle): OutboxHandler =>
  async (event: OutboxMessage) => {
    if (event.event_type === 'node.updated' && event.payload.name_changed !== true) return;
    const nodeId = typeof event.payload.node_id === 'string' ? event.payload.node_id : event.aggregate_id;
    const request: EmbedRequest = { nodeId, eventId: String(event.id) };
    await temporal.workflows.signalWithStart(embeddingQueueWorkflow, enqueueEmbeddingSignal, [[request]], {
      workspaceId: event.workspace_id,
    });
  };
