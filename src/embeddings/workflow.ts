import { defineSignal } from '@temporalio/workflow';
import { defineWorkflow } from '../platform/temporal/contract';

/**
 * The embedding queue's contract, shared by the outbox handler (which signals it) and the workflow
 * (which drains it). No I/O: the workflow bundle imports this file.
 */

/** One request to (re-)embed a node, identified by the event that asked for it. */
export interface EmbedRequest {
  nodeId: string;
  /** The outbox event id: redelivering the same event is recognised and charged once. */
  eventId: string;
}

/** One queue per workspace, so a burst of new nodes is embedded in a few batched provider calls. */
export const embeddingQueueWorkflowId = (workspaceId: string) => `embed-queue-${workspaceId}`;

export interface EmbeddingQueueInput {
  workspaceId: string;
  /** Requests carried over by continue-as-new. */
  pending?: EmbedRequest[];
}

export interface EmbeddingQueueTotals {
  embedded: number;
  refused: number;
  failed: number;
}

/** `embed-queue-<workspace_id>`, fed by signal-with-start so an idle queue is started on demand. */
export const embeddingQueueWorkflow = defineWorkflow<[EmbeddingQueueInput], EmbeddingQueueTotals>({
  type: 'embeddingQueueWorkflow',
  id: (input) => embeddingQueueWorkflowId(input.workspaceId),
  workspaceId: (input) => input.workspaceId,
});

export const enqueueEmbeddingSignal = defineSignal<[EmbedRequest[]]>('enqueueEmbedding');

/** Per node and per event: a retried activity or a redelivered event never charges twice. */
export const embedChargeKey = (request: EmbedRequest) => `embed:${request.nodeId}:${request.eventId}`;
