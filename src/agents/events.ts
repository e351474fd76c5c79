import { z } from 'zod';
import { defineEvent } from '../platform/outbox/event';

/** A session ended failed with an error signature; the clustering workflow follows it. */
export const sessionFailed = defineEvent('agent.session_failed', 1, z.object({ session_id: z.string() }));
