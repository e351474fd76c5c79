import { InsufficientCreditsError } from '../credits/errors';
import { confirmReservations, pendingReservations, refundCredits, reserveCredits } from '../credits/repository';
import type { UnitOfWork } from '../platform/db/unit-of-work';
import type { EmbeddingProvider } from '../platform/llm/embedding/contract';
import type { Logger } from '../platform/logger';
import { enqueueEvent } from '../platform/outbox/relay';
import { forEachWorkspace } from '../platform/workspace-sweep';
import { creditCost } from '../rules/costs';
import { LIMITS } from '../rules/limits';
import { embeddingRequested } from './events';
import type { EnqueueEmbeddings } from './outbox-handler';
import {
  EMBEDDING_ERRORS,
  liveNodes,
  nodesDueForBackfill,
  recordEmbeddingError,
  tenantCanPay,
  tenantOfWorkspace,
  workspacesWithUnembeddedNodes,
  writeEmbeddings,
} from './repository';
import type { EmbedRequest } from './workflow';
import { embedChargeKey } from './workflow';

export { EMBEDDING_ERRORS } from './repository';

const KIND = 'worker.embed_node';
// Requests per signal when the backfill hands a workspace's nodes to its queue (keeps payloads small).
const SIGNAL_CHUNK = 250;

/**
 * Asynchronous node embedding, step by step, for the embedding workflows' activities. Every step
 * runs in the workspace's scope (RLS), derives what it acts on from the workspace and the node ids
 * (the paying tenant, the charges, by their keys) rather than trusting a workflow's input, and is
 * idempotent. A node's charge (worker.embed_node, keyed by node and event) is `pending` until
 * its vector is written, which confirms it in the same transaction; a charge is refunded only
 * while pending, so never after its vector was written, and a vector is written only under a
 * pending charge. A tenant out of credits leaves its nodes without a vector and says why.
 */
export function createEmbeddingService(deps: {
  uow: UnitOfWork;
  provider: EmbeddingProvider;
  logger: Logger;
  enqueue: EnqueueEmbeddings;
}) {
  const { uow, provider, logger, enqueue } = deps;

  /** The latest request per node (a later one replaces an earlier one). */
  const latestPerNode = (requests: readonly EmbedRequest[]) =>
    new Map(requests.map((request) => [request.nodeId, request]));

  return {
    /**
     * Charges one credit per live node (a backfill request only while the node still has no
     * vector); the nodes the balance cannot cover get embedding_error set. Returns the requests
     * charged (or charged before: a repeated request returns its first charge).
     */
    async charge(input: {
      workspaceId: string;
      requests: EmbedRequest[];
    }): Promise<{ charged: EmbedRequest[]; refused: string[] }> {
      return uow({ workspaceId: input.workspaceId }, async (m) => {
        const tenantId = await tenantOfWorkspace(m, input.workspaceId);
        if (!tenantId) return { charged: [], refused: [] };
        const latest = latestPerNode(input.requests);
        const charged: EmbedRequest[] = [];
        const refused: string[] = [];
        for (const node of await liveNodes(m, [...latest.keys()])) {
          const request = latest.get(node.id);
          if (!request || (request.backfill && !node.unembedded)) continue;
          try {
            await reserveCredits(m, {
              tenantId,
              workspaceId: input.workspaceId,
              kind: KIND,
              idempotencyKey: embedChargeKey(request),
              pendingSettlement: true,
            });
            charged.push(request);
          } catch (error) {
            // A refusal writes nothing, so the transaction stays usable for the other nodes.
            if (!(error instanceof InsufficientCreditsError)) throw error;
            refused.push(node.id);
          }
        }
        await recordEmbeddingError(m, refused, EMBEDDING_ERRORS.insufficientCredits);
        return { charged, refused };
      });
    },

    /**
     * Embeds the current names of the nodes whose charge is still pending (the provider is called
     * outside any transaction), then in one transaction: writes each vector if the node still has
     * the name embedded, confirms those charges, and refunds the charges of nodes deleted or
     * renamed meanwhile (a rename has its own request).
     */
    async embedAndStore(input: {
      workspaceId: string;
      requests: EmbedRequest[];
    }): Promise<{ embedded: number; stale: number }> {
      const scope = { workspaceId: input.workspaceId };
      const latest = latestPerNode(input.requests);
      const keys = [...latest.values()].map(embedChargeKey);
      const nodes = await uow(scope, async (m) => {
        const charged = new Set((await pendingReservations(m, KIND, keys)).map((row) => row.idempotencyKey));
        const live = await liveNodes(m, [...latest.keys()]);
        return live.filter((node) => {
          const request = latest.get(node.id);
          return request !== undefined && charged.has(embedChargeKey(request));
        });
      });
      if (nodes.length === 0) return { embedded: 0, stale: 0 };
      const vectors = await provider.embed(nodes.map((node) => node.text));

      return uow(scope, async (m) => {
        const charges = await pendingReservations(m, KIND, keys, { lock: true });
        const ledgerOf = new Map(charges.map((row) => [row.idempotencyKey, row.id]));
        const writable = nodes.flatMap((node, index) => {
          const request = latest.get(node.id);
          const vector = vectors[index];
          const ledgerId = request && ledgerOf.get(embedChargeKey(request));
          return vector && ledgerId ? [{ ...node, vector, ledgerId }] : [];
        });
        const written = new Set(await writeEmbeddings(m, writable));
        await confirmReservations(
          m,
          writable.filter((node) => written.has(node.id)).map((node) => node.ledgerId),
        );
        const stale = writable.filter((node) => !written.has(node.id));
        for (const node of stale) await refundCredits(m, { ledgerId: node.ledgerId });
        return { embedded: written.size, stale: stale.length };
      });
    },

    /**
     * Compensation after the provider kept failing: refunds the requests' charges that are still
     * pending (a vector already written keeps its charge) and says why on those nodes.
     */
    async refundAndRecordFailure(input: {
      workspaceId: string;
      requests: EmbedRequest[];
      error: string;
    }): Promise<{ refunded: number }> {
      const nodeOfKey = new Map(input.requests.map((request) => [embedChargeKey(request), request.nodeId]));
      const refunded = await uow({ workspaceId: input.workspaceId }, async (m) => {
        const charges = await pendingReservations(m, KIND, [...nodeOfKey.keys()], { lock: true });
        const nodeIds: string[] = [];
        for (const charge of charges) {
          await refundCredits(m, { ledgerId: charge.id });
          const nodeId = charge.idempotencyKey && nodeOfKey.get(charge.idempotencyKey);
          if (nodeId) nodeIds.push(nodeId);
        }
        await recordEmbeddingError(m, nodeIds, input.error, { onlyUnembedded: true });
        return nodeIds.length;
      });
      logger.warn({ workspace_id: input.workspaceId, nodes: refunded }, 'embedding failed; credits refunded');
      return { refunded };
    },

    /**
     * A full queue hands requests back: each becomes an outbox event that reaches the queue
     * again after a delay, so a burst beyond the queue's bound waits in Postgres, not in history.
     */
    async requeue(input: { workspaceId: string; requests: EmbedRequest[] }): Promise<{ requeued: number }> {
      await uow({ workspaceId: input.workspaceId }, async (m) => {
        for (const request of input.requests) {
          await enqueueEvent(m, embeddingRequested, {
            workspaceId: input.workspaceId,
            aggregateId: request.nodeId,
            payload: { node_id: request.nodeId, ...(request.backfill ? { backfill: true } : {}) },
            delaySeconds: LIMITS.embeddings.requeueDelaySeconds,
          });
        }
      });
      return { requeued: input.requests.length };
    },

    /**
     * One batch of the backfill: for each workspace after `after` with unembedded nodes, hands the
     * nodes due (see `nodesDueForBackfill`) to its queue as backfill requests of this pass.
     */
    async backfill(input: {
      minAgeSeconds: number;
      after: string | null;
      passId: string;
      onWorkspace?: () => void;
    }): Promise<{ processed: number; last: string | null; queued: number }> {
      let queued = 0;
      const swept = await forEachWorkspace(
        {
          job: 'embedding backfill',
          page: (after) =>
            uow({}, (m) =>
              workspacesWithUnembeddedNodes(m, {
                minAgeSeconds: input.minAgeSeconds,
                after,
                limit: LIMITS.embeddings.backfillWorkspaces,
              }),
            ),
          after: input.after,
          onePageOnly: true,
          heartbeat: () => input.onWorkspace?.(),
          warn: (fields, message) => logger.warn(fields, message),
        },
        async (workspaceId) => {
          const nodeIds = await uow({ workspaceId }, async (m) =>
            nodesDueForBackfill(m, {
              minAgeSeconds: input.minAgeSeconds,
              retryRefused: await tenantCanPay(m, workspaceId, creditCost(KIND)),
              limit: LIMITS.embeddings.backfillPerWorkspace,
            }),
          );
          const requests = nodeIds.map((nodeId) => ({ nodeId, eventId: `backfill-${input.passId}`, backfill: true }));
          for (let start = 0; start < requests.length; start += SIGNAL_CHUNK) {
            await enqueue(workspaceId, requests.slice(start, start + SIGNAL_CHUNK));
          }
          if (requests.length > 0)
            logger.info({ workspace_id: workspaceId, nodes: requests.length }, 'embedding backfill');
          queued += requests.length;
        },
      );
      return { processed: swept.visited, last: swept.last, queued };
    },
  };
}

export type EmbeddingService = ReturnType<typeof createEmbeddingService>;
