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
import type {
  EmbeddingBackfillInput,
  EmbeddingBackfillResult,
  EmbeddingQueueInput,
  EmbeddingQueueTotals,
  EmbedRequest,
} from '../src/embeddings/workflow';
import { enqueueEmbeddingSignal } from '../src/embeddings/workflow';
import { LIMITS } from '../src/rules/limits';
import { databaseActivity, embeddingActivity, maintenanceActivity } from './activity-options';

const { chargeEmbeddings, refundEmbeddings, requeueEmbeddings } = proxyActivities<Activities>(databaseActivity);
const { embedAndStoreNodes } = proxyActivities<Activities>(embeddingActivity);
const { backfillEmbeddings } = proxyActivities<Activities>(maintenanceActivity);

const BATCH_SIZE = LIMITS.embeddings.batchSize;
// A burst of creations (a prompt's extraction) lands in one batch if it arrives within this window.
const COLLECT_WINDOW = '200 milliseconds';
const IDLE_TIMEOUT = '1 minute';
const BATCHES_PER_RUN = 200;
// Requests handed back to the outbox per activity call.
const REQUEUE_CHUNK = 500;

/**
 * One per workspace (`embed-queue-<workspace_id>`), fed by node.created / node.updated through
 * signal-with-start: collects requests (one per node, the latest wins), then per batch charges
 * worker.embed_node per node, embeds the charged nodes in one provider call and writes the
 * vectors. If the provider keeps failing, the charges not yet confirmed by a written vector are
 * refunded and the nodes record why. It holds at most `maxPending` requests: beyond that a request
 * goes back to the outbox (it arrives again later), so neither memory nor the input carried by
 * continue-as-new grows without bound. Ends after a minute without work.
 */
export async function embeddingQueueWorkflow(input: EmbeddingQueueInput): Promise<EmbeddingQueueTotals> {
  const { workspaceId } = input;
  const maxPending = input.maxPending ?? LIMITS.embeddings.queueMaxPending;
  const batchesPerRun = input.batchesPerRun ?? BATCHES_PER_RUN;
  const pending = new Map<string, EmbedRequest>();
  const overflow: EmbedRequest[] = [];
  const accept = (requests: EmbedRequest[]) => {
    for (const request of requests) {
      const queued = pending.get(request.nodeId);
      // A backfill request never replaces an event's request (which is charged even if embedded).
      if (queued) {
        if (!request.backfill || queued.backfill) pending.set(request.nodeId, request);
      } else if (pending.size < maxPending) {
        pending.set(request.nodeId, request);
      } else {
        overflow.push(request);
      }
    }
  };
  accept(input.pending ?? []);
  setHandler(enqueueEmbeddingSignal, accept);

  const totals: EmbeddingQueueTotals = { embedded: 0, refused: 0, failed: 0, requeued: 0 };
  // Overflow refills the queue while it has room; what still does not fit goes back to the outbox.
  const handBack = async () => {
    while (overflow.length > 0 && pending.size < maxPending) {
      const request = overflow.shift();
      if (request) accept([request]);
    }
    while (overflow.length > 0) {
      const { requeued } = await requeueEmbeddings({ workspaceId, requests: overflow.splice(0, REQUEUE_CHUNK) });
      totals.requeued += requeued;
    }
  };

  for (let batches = 0; ; batches++) {
    await handBack();
    if (!(await condition(() => pending.size > 0 || overflow.length > 0, IDLE_TIMEOUT))) return totals;
    if (pending.size === 0) continue;
    if (pending.size < BATCH_SIZE) await condition(() => pending.size >= BATCH_SIZE, COLLECT_WINDOW);
    const batch = [...pending.values()].slice(0, BATCH_SIZE);
    for (const request of batch) pending.delete(request.nodeId);

    const { charged, refused } = await chargeEmbeddings({ workspaceId, requests: batch });
    totals.refused += refused.length;
    if (charged.length > 0) {
      try {
        const { embedded } = await embedAndStoreNodes({ workspaceId, requests: charged });
        totals.embedded += embedded;
      } catch (error) {
        // Retries are exhausted: compensate (refund, record the reason) and keep serving the queue.
        if (!(error instanceof ActivityFailure)) throw error;
        log.warn('embedding batch failed', { workspaceId, nodes: charged.length });
        const { refunded } = await refundEmbeddings({
          workspaceId,
          requests: charged,
          error: 'embedding_provider_failed',
        });
        totals.failed += refunded;
      }
    }

    if (batches + 1 >= batchesPerRun || workflowInfo().continueAsNewSuggested) {
      await handBack();
      return continueAsNew<typeof embeddingQueueWorkflow>({
        workspaceId,
        pending: [...pending.values()],
        ...(input.batchesPerRun === undefined ? {} : { batchesPerRun: input.batchesPerRun }),
        ...(input.maxPending === undefined ? {} : { maxPending: input.maxPending }),
      });
    }
  }
}

// Enough batches per run to keep the history small; the rest continues as a new run.
const BACKFILL_BATCHES_PER_RUN = 200;

/**
 * Scheduled: hands every workspace's live nodes without a vector, older than `minAgeSeconds`, to
 * its queue (lost requests, provider outages, tenants that can pay again), a batch of workspaces
 * per activity.
 */
export async function embeddingBackfillWorkflow(input: EmbeddingBackfillInput): Promise<EmbeddingBackfillResult> {
  let after = input.after ?? null;
  let workspaces = 0;
  let queued = 0;
  for (let i = 0; i < BACKFILL_BATCHES_PER_RUN; i++) {
    const batch = await backfillEmbeddings({ minAgeSeconds: input.minAgeSeconds, after });
    workspaces += batch.processed;
    queued += batch.queued;
    if (batch.last === null || batch.processed < LIMITS.embeddings.backfillWorkspaces) return { workspaces, queued };
    after = batch.last;
  }
  return continueAsNew<typeof embeddingBackfillWorkflow>({ minAgeSeconds: input.minAgeSeconds, after });
}
