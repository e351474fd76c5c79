/**
 * The embedding queue's names and message shape, shared by the outbox handler (which signals it)
 * and the workflow (which drains it). Plain data only: the workflow bundle imports this file.
 */

/** One request to (re-)embed a node, identified by the event that asked for it. */
export interface EmbedRequest {
  nodeId: string;
  /** The outbox event id: redelivering the same event is recognised and charged once. */
  eventId: string;
}

export const EMBEDDING_QUEUE_WORKFLOW = 'embeddingQueueWorkflow';
export const ENQUEUE_EMBEDDING_SIGNAL = 'enqueueEmbedding';

/** One queue per workspace, so a burst of new nodes is embedded in a few batched provider calls. */
export const embeddingQueueWorkflowId = (workspaceId: string) => `embed-queue-${workspaceId}`;

/** Per node and per event: a retried activity or a redelivered event never charges twice. */
export const embedChargeKey = (request: EmbedRequest) => `embed:${request.nodeId}:${request.eventId}`;
