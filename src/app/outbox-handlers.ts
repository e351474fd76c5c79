import type { UnitOfWork } from '../platform/db/unit-of-work';
import type { EventContract } from '../platform/outbox/event';
import type { OutboxHandler } from '../platform/outbox/relay';
import type { TemporalHandle } from '../platform/temporal/connection';
import { FEATURES } from './features';

/**
 * Every outbox event a feature writes, by its contract, gathered from the manifests. The relay
 * dead-letters a row of any other type, and one whose payload its contract refuses.
 */
export const OUTBOX_EVENTS: readonly EventContract[] = FEATURES.flatMap((feature) => feature.events ?? []);

/**
 * Which workflows each committed event starts, in the features' order (so `node.created` reaches
 * the person resolver before the embedding queue). Every handler derives its workflow id from the
 * event, so redelivery is harmless. The composition root wires the relay with this list.
 */
export const OUTBOX_HANDLERS = (temporal: TemporalHandle, uow: UnitOfWork): OutboxHandler[] =>
  FEATURES.flatMap((feature) => feature.outboxHandlers?.(temporal, uow) ?? []);
