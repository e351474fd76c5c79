import { defineSignal } from '@temporalio/workflow';
import { defineWorkflow } from '../platform/temporal/contract';
import type { WorkspaceSweepInput, WorkspaceSweepResult } from '../platform/temporal/sweeps';

/**
 * The embedding queue's contract, shared by the outbox handler (which signals it) and the workflow
 * (which drains it), and the backfill's. No I/O: the workflow bundle imports this file.
 */

/** One request to (re-)embed a node, identified by the event that asked for it. */
export interface EmbedRequest {
  nodeId: string;
  /** The outbox event id (or the backfill pass): a request seen again is charged once. */
  eventId: string;
  /**
   * Sent by the backfill: embed only if the node still has no vector when its turn comes. A
   * request from an event (a creation, a rename) replaces a backfill request for the same node.
   */
  backfill?: boolean;
}

/** One queue per workspace, so a burst of new nodes is embedded in a few batched provider calls. */
export const embeddingQueueWorkflowId = (workspaceId: string) => `embed-queue-${workspaceId}`;

export interface EmbeddingQueueInput {
  workspaceId: string;
  /** Requests carried over by continue-as-new (at most `maxPending`). */
  pending?: EmbedRequest[];
  /**
   * Batches before the run continues as new (default 200). Operators and tests lower it; it is
   * carried over, like `maxPending`.
   */
  batchesPerRun?: number;
  /** Requests held at most (default LIMITS.embeddings.queueMaxPending); more go back to the outbox. */
  maxPending?: number;
}

export interface EmbeddingQueueTotals {
  embedded: number;
  refused: number;
  failed: number;
  /** Requests handed back to the outbox because the queue was full. */
  requeued: number;
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

export interface EmbeddingBackfillInput extends WorkspaceSweepInput {
  /** Nodes younger than this belong to the outbox's fast path. */
  minAgeSeconds: number;
}

export interface EmbeddingBackfillResult extends Pick<WorkspaceSweepResult, 'workspaces'> {
  /** Nodes handed to their workspace's queue. */
  queued: number;
}

/**
 * Scheduled (`embedding-backfill`): re-queues live nodes without a vector whose request was lost
 * (a queue that failed, a request dropped) and nodes whose embedding may now succeed.
 */
export const embeddingBackfillWorkflow = defineWorkflow<[EmbeddingBackfillInput], EmbeddingBackfillResult>({
  type: 'embeddingBackfillWorkflow',
  id: () => 'embedding-backfill',
});
