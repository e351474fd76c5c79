import type { OutboxHandler } from '../platform/outbox/relay';
import type { TemporalHandle } from '../platform/temporal/connection';
import { FEATURES } from './features';

/**
 * Which workflows each committed event starts, gathered from the features' manifests (in the
 * features' order when two handle one event). Every handler derives its workflow id from the
 * event, so redelivery is harmless. The composition root wires the relay with this map.
 */
export const OUTBOX_HANDLERS = (temporal: TemporalHandle): Record<string, OutboxHandler[]> => {
  const handlers: Record<string, OutboxHandler[]> = {};
  for (const feature of FEATURES) {
    for (const [event, list] of Object.entries(feature.outboxHandlers?.(temporal) ?? {})) {
      handlers[event] = [...(handlers[event] ?? []), ...list];
    }
  }
  return handlers;
};
