import type { TemporalHandle } from '../platform/temporal/connection';
import type { MaintenanceSchedule } from '../platform/temporal/schedules';
import { embeddingRequested } from './events';
import { embeddingHandlers } from './outbox-handler';
import { embeddingBackfillWorkflow } from './workflow';

/** Node embeddings: the queue that embeds new and renamed nodes, and the backfill. */
export const embeddingsFeature = {
  name: 'embeddings',
  events: [embeddingRequested],
  outboxHandlers: (temporal: TemporalHandle) => {
    const embeddings = embeddingHandlers(temporal);
    // node.created; node.updated re-embeds when the name changed; a request the full queue handed back.
    return [embeddings.created, embeddings.updated, embeddings.requested];
  },
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
