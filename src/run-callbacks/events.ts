import { z } from 'zod';
import { defineEvent } from '../platform/outbox/event';

/** The run events a callback can ask for; a dispatch's callback defaults to `run.finished`. */
export const CALLBACK_EVENT_TYPES = [
  'run.finished',
  'approval.requested',
  'waitpoint.created',
  'waitpoint.completed',
] as const;
export type CallbackEventType = (typeof CALLBACK_EVENT_TYPES)[number];

/**
 * A delivery to make (one subscription, one event), or a redelivery of one (`series` bumped):
 * written in the transaction that finished the run or requested the approval, or that asked for
 * the redelivery, so the POSTs follow exactly the committed events.
 */
export const runCallbackQueued = defineEvent(
  'run_callback.queued',
  1,
  z.object({ delivery_id: z.string(), series: z.number().int().nonnegative() }),
);
