import { embeddingQueue } from '../embeddings/outbox-handler';
import type { OutboxHandler } from '../platform/outbox/relay';
import { onEvent } from '../platform/outbox/relay';
import type { TemporalHandle } from '../platform/temporal/connection';
import { codeEmbeddingRequested } from './events';

// Requests per signal to the embedding queue (keeps payloads small, as the backfill does).
const SIGNAL_CHUNK = 250;

/**
 * code.embedding_requested (one per ingest batch): hands the batch's new or changed code nodes to
 * the workspace's embedding queue, keyed by this event, so redelivery charges each node once.
 */
export const enqueueCodeEmbeddings = (temporal: TemporalHandle): OutboxHandler<typeof codeEmbeddingRequested> => {
  const enqueue = embeddingQueue(temporal);
  return onEvent(codeEmbeddingRequested, async (event) => {
    const nodeIds = event.payload.node_ids;
    for (let start = 0; start < nodeIds.length; start += SIGNAL_CHUNK) {
      const chunk = nodeIds.slice(start, start + SIGNAL_CHUNK);
      await enqueue(
        event.workspace_id,
        chunk.map((nodeId) => ({ nodeId, eventId: String(event.id) })),
      );
    }
  });
};
