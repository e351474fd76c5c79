import { z } from 'zod';
import { defineEvent } from '../platform/outbox/event';

/** A request a full embedding queue handed back; it reaches the queue again after a delay. */
export const embeddingRequested = defineEvent(
  'embedding.requested',
  1,
  z.object({ node_id: z.string(), backfill: z.boolean().optional() }),
);
