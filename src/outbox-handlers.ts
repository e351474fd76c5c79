import { startFailureClustering } from './agents/outbox-handler';
import { enqueueCodeEmbeddings } from './code/outbox-handler';
import { CODE_EMBEDDING_EVENT } from './code/workflow';
import { enqueueEmbedding } from './embeddings/outbox-handler';
import { EMBEDDING_REQUESTED_EVENT } from './embeddings/workflow';
import { startPersonResolver } from './merges/outbox-handler';
import type { OutboxHandler } from './platform/outbox/relay';
import type { TemporalHandle } from './platform/temporal/connection';
import { startRun } from './runs/outbox-handler';
import { RUN_DISPATCHED_EVENT } from './runs/workflow';

/**
 * Which workflows each committed event starts. Every handler derives its workflow id from the
 * event, so redelivery is harmless. Features register their handlers here (the composition root
 * wires the relay with this map).
 */
export const OUTBOX_HANDLERS = (temporal: TemporalHandle): Record<string, OutboxHandler[]> => ({
  // Person-type nodes only; the handler filters by type.
  'node.created': [startPersonResolver(temporal), enqueueEmbedding(temporal)],
  // Re-embeds when the name changed; the handler filters on payload.name_changed.
  'node.updated': [enqueueEmbedding(temporal)],
  // A request the embedding queue handed back because it was full.
  [EMBEDDING_REQUESTED_EVENT]: [enqueueEmbedding(temporal)],
  // An agent session ended failed with an error signature: cluster it (src/agents).
  'agent.session_failed': [startFailureClustering(temporal)],
  // A committed dispatch: start its run workflow (src/runs).
  [RUN_DISPATCHED_EVENT]: [startRun(temporal)],
  // An ingest batch's new or changed code nodes: embed them (src/code).
  [CODE_EMBEDDING_EVENT]: [enqueueCodeEmbeddings(temporal)],
});
