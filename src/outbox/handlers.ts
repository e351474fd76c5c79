import type { TemporalHandle } from '../temporal/connection';
import type { OutboxHandler } from './relay';

/**
 * Which workflows each committed event starts. Every handler derives its workflow id from the
 * event, so redelivery is harmless. Features register their handlers here.
 */
export const OUTBOX_HANDLERS = (_temporal: TemporalHandle): Record<string, OutboxHandler[]> => ({});
