import {
  ActivityFailure,
  condition,
  continueAsNew,
  log,
  proxyActivities,
  setHandler,
  workflowInfo,
} from '@temporalio/workflow';
import type { Activities } from '../activities';
import type { EmbeddingQueueInput, EmbeddingQueueTotals, EmbedRequest } from '../src/embeddings/workflow';
import { enqueueEmbeddingSignal } from '../src/embeddings/workflow';
import { databaseActivity, embeddingActivity } from './activity-options';

const { chargeEmbeddings, refundEmbeddings } = proxyActivities<Activities>(databaseActivity);
const { embedAndStoreNodes } = proxyActivities<Activities>(embeddingActivity);

const BATCH_SIZE = 64;
// A burst of creations (a prompt's extraction) lands in one batch if it arrives within this window.
const COLLECT_WINDOW = '200 milliseconds';
const IDLE_TIMEOUT = '1 minute';
const BATCHES_PER_RUN = 200;

/**
 * One per workspace (`embed-queue-<workspace_id>`), fed by node.created / node.updated through
 * signal-with-start: collects requests, then per batch charges worker.embed_node per node, embeds
 * the charged nodes in one provider call and writes the vectors. If the provider keeps failing the
 * batch is refunded and the nodes record why. Ends after a minute without work.
 */
export async function embeddingQueueWorkflow(input: EmbeddingQueueInput): Promise<EmbeddingQueueTotals> {
  const pending = new Map<string, EmbedRequest>();
  const seen = new Set<string>();
  const accept = (requests: EmbedRequest[]) => {
    for (const request of requests) {
      if (seen.has(request.eventId)) continue;
      seen.add(request.eventId);
      pending.set(request.eventId, request);
    }
  };
  accept(input.pending ?? []);
  setHandler(enqueueEmbeddingSignal, accept);

  const totals: EmbeddingQueueTotals = { embedded: 0, refused: 0, failed: 0 };
  for (let batches = 0; ; batches++) {
    if (!(await condition(() => pending.size > 0, IDLE_TIMEOUT))) return totals;
    if (pending.size < BATCH_SIZE) await condition(() => pending.size >= BATCH_SIZE, COLLECT_WINDOW);
    const batch = [...pending.values()].slice(0, BATCH_SIZE);
    for (const request of batch) pending.delete(request.eventId);

    const { charged, refused } = await chargeEmbeddings({ workspaceId: input.workspaceId, requests: batch });
    totals.refused += refused.length;
    if (charged.length > 0) {
      try {
        const { embedded } = await embedAndStoreNodes({
          workspaceId: input.workspaceId,
          nodeIds: charged.map((node) => node.nodeId),
        });
        totals.embedded += embedded;
      } catch (error) {
        // Retries are exhausted: compensate (refund, record the reason) and keep serving the queue.
        if (!(error instanceof ActivityFailure)) throw error;
        log.warn('embedding batch failed', { workspaceId: input.workspaceId, nodes: charged.length });
        await refundEmbeddings({ workspaceId: input.workspaceId, charged, error: 'embedding_provider_failed' });
        totals.failed += charged.length;
      }
    }

    if (batches + 1 >= BATCHES_PER_RUN || workflowInfo().continueAsNewSuggested) {
      return continueAsNew<typeof embeddingQueueWorkflow>({
        workspaceId: input.workspaceId,
        pending: [...pending.values()],
      });
    }
  }
}
