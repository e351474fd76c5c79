import { z } from 'zod';
import { defineEvent } from '../platform/outbox/event';

/** An ingest batch's new or changed code nodes, for the embedding queue (one event per batch). */
export const codeEmbeddingRequested = defineEvent(
  'code.embedding_requested',
  1,
  z.object({ node_ids: z.array(z.string()) }),
);
