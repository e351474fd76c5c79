import type { ChargedNode, EmbeddingService } from '../src/embeddings/service';
import type { EmbedRequest } from '../src/embeddings/workflow';

/** Thin adapters over the embedding service; each step is idempotent, so retries are harmless. */
export function createEmbeddingActivities(deps: { embeddings: EmbeddingService }) {
  return {
    chargeEmbeddings: (input: { workspaceId: string; requests: EmbedRequest[] }) => deps.embeddings.charge(input),
    embedAndStoreNodes: (input: { workspaceId: string; nodeIds: string[] }) => deps.embeddings.embedAndStore(input),
    refundEmbeddings: (input: { workspaceId: string; charged: ChargedNode[]; error: string }) =>
      deps.embeddings.refundAndRecordFailure(input),
  };
}
