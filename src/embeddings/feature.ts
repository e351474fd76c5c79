import type { UnitOfWork } from '../platform/db/unit-of-work';
import type { EmbeddingProvider } from '../platform/llm/embedding/contract';
import type { Logger } from '../platform/logger';
import type { TemporalHandle } from '../platform/temporal/connection';
import type { MaintenanceSchedule } from '../platform/temporal/schedules';
import { embeddingRequested } from './events';
import { embeddingHandlers, embeddingQueue } from './outbox-handler';
import { createEmbeddingService } from './service';
import { embeddingBackfillWorkflow } from './workflow';

/** Node embeddings: the queue that embeds new and renamed nodes, and the backfill. */
export const embeddingsFeature = {
  name: 'embeddings',
  services: {
    /** Node embedding steps for the embedding workflow (the provider itself is the kernel's `embeddings`). */
    embeddings: (ctx: { uow: UnitOfWork; embeddings: EmbeddingProvider; logger: Logger; temporal: TemporalHandle }) =>
      createEmbeddingService({
        uow: ctx.uow,
        provider: ctx.embeddings,
        logger: ctx.logger,
        enqueue: embeddingQueue(ctx.temporal),
      }),
  },
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
