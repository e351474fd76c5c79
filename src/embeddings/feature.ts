import type { TemporalHandle } from '../platform/temporal/connection';
import type { MaintenanceSchedule } from '../platform/temporal/schedules';
import { enqueueEmbedding } from './outbox-handler';
import { EMBEDDING_REQUESTED_EVENT, embeddingBackfillWorkflow } from './workflow';

/** Node embeddings: the queue that embeds new and renamed nodes, and the backfill. */
export const embeddingsFeature = {
  name: 'embeddings',
  outboxHandlers: (temporal: TemporalHandle) => ({
    'node.created': [enqueueEmbedding(temporal)],
    // Re-embeds when the name changed; the handler filters on payload.name_changed.
    'node.updated': [enqueueEmbedding(temporal)],
    // A request the embedding queue handed back because it was full.
    [EMBEDDING_REQUESTED_EVENT]: [enqueueEmbedding(temporal)],
  }),
  schedules: [
    {
      name: 'embedding-backfill',
      description: 'Re-queues live nodes older than 5 minutes that have no vector and no permanent embedding error.',
      workflow: embeddingBackfillWorkflow,
      args: [{ minAgeSeconds: 300 }],
      spec: { intervals: [{ every: '10 minutes' }] },
    },
  ] satisfies MaintenanceSchedule[],
};
