import type { OutboxEvent, OutboxHandler } from '../platform/outbox/relay';
import type { TemporalHandle } from '../platform/temporal/connection';
import { workspaceSearchAttributes } from '../platform/temporal/search-attributes';
import type { EmbedRequest } from './queue';
import { EMBEDDING_QUEUE_WORKFLOW, ENQUEUE_EMBEDDING_SIGNAL, embeddingQueueWorkflowId } from './queue';

/**
 * node.created, and node.updated when the name changed: hand the node to its workspace's embedding
 * queue (signal-with-start, so the queue is started when idle). The request carries the event id,
 * which the queue deduplicates and the charge is keyed by, so redelivery is harmless.
 */
export const enqueueEmbedding =
  (temporal: TemporalHandle): OutboxHandler =>
  async (event: OutboxEvent) => {
    if (event.event_type === 'node.updated' && event.payload.name_changed !== true) return;
    const nodeId = typeof event.payload.node_id === 'string' ? event.payload.node_id : event.aggregate_id;
    const request: EmbedRequest = { nodeId, eventId: String(event.id) };
    await temporal.client.workflow.signalWithStart(EMBEDDING_QUEUE_WORKFLOW, {
      workflowId: embeddingQueueWorkflowId(event.workspace_id),
      taskQueue: temporal.taskQueue,
      args: [{ workspaceId: event.workspace_id }],
      signal: ENQUEUE_EMBEDDING_SIGNAL,
      signalArgs: [[request]],
      typedSearchAttributes: workspaceSearchAttributes(event.workspace_id),
    });
  };
