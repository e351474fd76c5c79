import type { OutboxHandler, OutboxMessage } from '../platform/outbox/relay';
import type { TemporalHandle } from '../platform/temporal/connection';
import type { EmbedRequest } from './workflow';
import { embeddingQueueWorkflow, enqueueEmbeddingSignal } from './workflow';

/** Hands requests to a workspace's embedding queue. */
export type EnqueueEmbeddings = (workspaceId: string, requests: EmbedRequest[]) => Promise<void>;

/** Signal-with-start: the queue is started when idle, so a request is never refused for that. */
export const embeddingQueue =
  (temporal: TemporalHandle): EnqueueEmbeddings =>
  async (workspaceId, requests) => {
    if (requests.length === 0) return;
    await temporal.workflows.signalWithStart(embeddingQueueWorkflow, enqueueEmbeddingSignal, [requests], {
      workspaceId,
    });
  };

/**
 * node.created, node.updated when the name changed, and embedding.requested (a request a full queue
 * handed back): hand the node to its workspace's embedding queue. The request carries the event
 * id, which the charge is keyed by, so redelivery is harmless.
 */
export const enqueueEmbedding = (temporal: TemporalHandle): OutboxHandler => {
  const enqueue = embeddingQueue(temporal);
  return async (event: OutboxMessage) => {
    if (event.event_type === 'node.updated' && event.payload.name_changed !== true) return;
    const nodeId = typeof event.payload.node_id === 'string' ? event.payload.node_id : event.aggregate_id;
    const request: EmbedRequest = {
      nodeId,
      eventId: String(event.id),
      ...(event.payload.backfill === true ? { backfill: true } : {}),
    };
    await enqueue(event.workspace_id, [request]);
  };
};
