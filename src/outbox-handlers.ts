import { sessionFailed } from './agents/events';
import { startFailureClustering } from './agents/outbox-handler';
import { codeEmbeddingRequested } from './code/events';
import { enqueueCodeEmbeddings } from './code/outbox-handler';
import { embeddingRequested } from './embeddings/events';
import { embeddingHandlers } from './embeddings/outbox-handler';
import { nodeCreated, nodeUpdated } from './graph/events';
import { startPersonResolver } from './merges/outbox-handler';
import type { EventContract } from './platform/outbox/event';
import type { OutboxHandler } from './platform/outbox/relay';
import type { TemporalHandle } from './platform/temporal/connection';
import { decisionRecorded, runDispatched } from './runs/events';
import { startRun } from './runs/outbox-handler';

/**
 * Every outbox event a feature writes, by its contract. The relay dead-letters a row of any other
 * type, and one whose payload its contract refuses.
 */
export const OUTBOX_EVENTS: readonly EventContract[] = [
  nodeCreated,
  nodeUpdated,
  embeddingRequested,
  sessionFailed,
  runDispatched,
  // Recorded for the run's history; nothing handles it (it is delivered as soon as it is read).
  decisionRecorded,
  codeEmbeddingRequested,
];

/**
 * Which workflows each committed event starts, in delivery order. Every handler derives its
 * workflow id from the event, so redelivery is harmless. Features register their handlers here
 * (the composition root wires the relay with this list).
 */
export const OUTBOX_HANDLERS = (temporal: TemporalHandle): OutboxHandler[] => {
  const embeddings = embeddingHandlers(temporal);
  return [
    // node.created: the person resolver (person-type nodes only), then the embedding queue.
    startPersonResolver(temporal),
    embeddings.created,
    // Re-embeds when the name changed.
    embeddings.updated,
    // A request the embedding queue handed back because it was full.
    embeddings.requested,
    // An agent session ended failed with an error signature: cluster it (src/agents).
    startFailureClustering(temporal),
    // A committed dispatch: start its run workflow (src/runs).
    startRun(temporal),
    // An ingest batch's new or changed code nodes: embed them (src/code).
    enqueueCodeEmbeddings(temporal),
  ];
};
