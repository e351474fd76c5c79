import { InsufficientCreditsError } from '../credits/errors';
import { refundCredits, reserveCredits } from '../credits/repository';
import type { UnitOfWork } from '../platform/db/unit-of-work';
import type { EmbeddingProvider } from '../platform/llm/embedding-provider';
import type { Logger } from '../platform/logger';
import { liveNodeIds, liveNodeNames, recordEmbeddingError, tenantOfWorkspace, writeEmbeddings } from './repository';
import type { EmbedRequest } from './workflow';
import { embedChargeKey } from './workflow';

/** What nodes.embedding_error holds when a node is left without a vector. */
export const EMBEDDING_ERRORS = {
  insufficientCredits: 'insufficient_credits',
  providerFailed: 'embedding_provider_failed',
} as const;

export interface ChargedNode {
  nodeId: string;
  ledgerId: string;
}

/**
 * Asynchronous node embedding, step by step, for the embedding workflow's activities: charge each
 * node (worker.embed_node, idempotent per node and event), embed the charged nodes' names in one
 * provider call, write the vectors. A tenant out of credits leaves its nodes without a vector and
 * says why in nodes.embedding_error. Every step runs in the node's workspace scope (RLS).
 */
export function createEmbeddingService(deps: { uow: UnitOfWork; provider: EmbeddingProvider; logger: Logger }) {
  const { uow, provider, logger } = deps;

  return {
    /** Charges one credit per live node; the nodes the balance cannot cover get embedding_error set. */
    async charge(input: {
      workspaceId: string;
      requests: EmbedRequest[];
    }): Promise<{ charged: ChargedNode[]; refused: string[] }> {
      return uow({ workspaceId: input.workspaceId }, async (m) => {
        const tenantId = await tenantOfWorkspace(m, input.workspaceId);
        if (!tenantId) return { charged: [], refused: [] };
        // The latest request per node wins; deleted nodes are not charged.
        const latest = new Map(input.requests.map((request) => [request.nodeId, request]));
        const charged: ChargedNode[] = [];
        const refused: string[] = [];
        for (const id of await liveNodeIds(m, [...latest.keys()])) {
          const request = latest.get(id);
          if (!request) continue;
          try {
            const receipt = await reserveCredits(m, {
              tenantId,
              workspaceId: input.workspaceId,
              kind: 'worker.embed_node',
              idempotencyKey: embedChargeKey(request),
            });
            charged.push({ nodeId: id, ledgerId: receipt.ledger_id });
          } catch (error) {
            // A refusal writes nothing, so the transaction stays usable for the other nodes.
            if (!(error instanceof InsufficientCreditsError)) throw error;
            refused.push(id);
          }
        }
        await recordEmbeddingError(m, refused, EMBEDDING_ERRORS.insufficientCredits);
        return { charged, refused };
      });
    },

    /**
     * Embeds the nodes' current names (the provider is called outside any transaction) and writes
     * each vector only if the name is still the one embedded: a rename in between has its own request.
     */
    async embedAndStore(input: {
      workspaceId: string;
      nodeIds: string[];
    }): Promise<{ embedded: number; stale: number }> {
      const nodes = await uow({ workspaceId: input.workspaceId }, (m) => liveNodeNames(m, input.nodeIds));
      if (nodes.length === 0) return { embedded: 0, stale: input.nodeIds.length };
      const vectors = await provider.embed(nodes.map((node) => node.name));
      const written = await uow({ workspaceId: input.workspaceId }, (m) =>
        writeEmbeddings(
          m,
          nodes.flatMap((node, index) => {
            const vector = vectors[index];
            return vector ? [{ ...node, vector }] : [];
          }),
        ),
      );
      return { embedded: written.length, stale: input.nodeIds.length - written.length };
    },

    /** Compensation after the provider kept failing: give the credits back and say why. */
    async refundAndRecordFailure(input: { workspaceId: string; charged: ChargedNode[]; error: string }): Promise<void> {
      await uow({ workspaceId: input.workspaceId }, async (m) => {
        for (const { ledgerId } of input.charged) await refundCredits(m, { ledgerId });
        await recordEmbeddingError(
          m,
          input.charged.map((node) => node.nodeId),
          input.error,
          { onlyUnembedded: true },
        );
      });
      logger.warn(
        { workspace_id: input.workspaceId, nodes: input.charged.length },
        'embedding failed; credits refunded',
      );
    },
  };
}

export type EmbeddingService = ReturnType<typeof createEmbeddingService>;
