import { z } from 'zod';
import { defineEvent } from '../platform/outbox/event';

/**
 * A node was created (the graph API, a completed prompt, an agent's finding) and stays: the
 * embedding queue embeds it, and the person resolver looks at a person-type one.
 */
export const nodeCreated = defineEvent(
  'node.created',
  1,
  z.object({ node_id: z.string(), type: z.string(), name: z.string() }),
);

/** A node was changed through the API; a new name makes its embedding stale. */
export const nodeUpdated = defineEvent('node.updated', 1, z.object({ node_id: z.string(), name_changed: z.boolean() }));
