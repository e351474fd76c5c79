import { randomUUID } from 'node:crypto';
import { Context, heartbeat } from '@temporalio/activity';
import type { EmbeddingService } from '../src/embeddings/service';
import type { EmbedRequest } from '../src/embeddings/workflow';

/**
 * Thin adapters over the embedding service. Inputs name a workspace and nodes only: the paying
 * tenant and the charges are derived inside, under the workspace's RLS scope. Each step is
 * idempotent, so retries are harmless.
 */
export function createEmbeddingActivities(deps: { embeddings: EmbeddingService }) {
  return {
    chargeEmbeddings: (input: { workspaceId: string; requests: EmbedRequest[] }) => deps.embeddings.charge(input),
    embedAndStoreNodes: (input: { workspaceId: string; requests: EmbedRequest[] }) =>
      deps.embeddings.embedAndStore(input),
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
