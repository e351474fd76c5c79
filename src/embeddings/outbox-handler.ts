import { nodeCreated, nodeUpdated } from '../graph/events';
import { onEvent } from '../platform/outbox/relay';
import type { TemporalHandle } from '../platform/temporal/connection';
import { embeddingRequested } from './events';
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
export const embeddingHandlers = (temporal: TemporalHandle) => {
  const enqueue = embeddingQueue(temporal);
  const embed = (workspaceId: string, eventId: string, nodeId: string, backfill?: boolean) =>
    enqueue(workspaceId, [{ nodeId, eventId, ...(backfill === true ? { backfill: true } : {}) }]);
  return {
    created: onEvent(nodeCreated, (event) => embed(event.workspace_id, event.id, event.payload.node_id)),
    updated: onEvent(nodeUpdated, async (event) => {
      if (event.payload.name_changed) await embed(event.workspace_id, event.id, event.payload.node_id);
    }),
    requested: onEvent(embeddingRequested, (event) =>
      embed(event.workspace_id, event.id, event.payload.node_id, event.payload.backfill),
    ),
  };
};
