import { randomUUID } from 'node:crypto';
import { Context, heartbeat } from '@temporalio/activity';
import { ApplicationFailure } from '@temporalio/common';
import type { EmbeddingService } from '../src/embeddings/service';
import type { EmbedRequest } from '../src/embeddings/workflow';
import { isTransient } from '../src/platform/transient';

/** Attempts of an embedding batch that fails for a reason other than an outage. */
const EMBEDDING_ATTEMPTS = 3;

/**
 * Thin adapters over the embedding service. Inputs name a workspace and nodes only: the paying
 * tenant and the charges are derived inside, under the workspace's RLS scope. Each step is
 * idempotent, so retries are harmless.
 */
export function createEmbeddingActivities(deps: { embeddings: EmbeddingService }) {
  return {
    chargeEmbeddings: (input: { workspaceId: string; requests: EmbedRequest[] }) => deps.embeddings.charge(input),
    embedAndStoreNodes: async (input: { workspaceId: string; requests: EmbedRequest[] }) => {
      try {
        return await deps.embeddings.embedAndStore(input);
      } catch (error) {
        // Postgres or Temporal unavailable: retried for as long as it lasts (issue 24). Anything
        // else (the provider, past its client's own retries) gets a few attempts, then the batch
        // is refunded by the workflow.
        if (isTransient(error) || Context.current().info.attempt < EMBEDDING_ATTEMPTS) throw error;
        const message = error instanceof Error ? error.message : String(error);
        throw ApplicationFailure.nonRetryable(message, 'embedding_failed');
      }
    },
    refundEmbeddings: (input: { workspaceId: string; requests: EmbedRequest[]; error: string }) =>
      deps.embeddings.refundAndRecordFailure(input),
    requeueEmbeddings: (input: { workspaceId: string; requests: EmbedRequest[] }) => deps.embeddings.requeue(input),

    /** One batch of workspaces of the backfill pass; the pass is the calling workflow run. */
    backfillEmbeddings: (input: { minAgeSeconds: number; after: string | null }) =>
      deps.embeddings.backfill({
        ...input,
        passId: Context.current().info.workflowExecution?.runId ?? randomUUID(),
        onWorkspace: () => heartbeat(),
      }),
  };
}
