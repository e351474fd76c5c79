import { heartbeat } from '@temporalio/activity';
import type { CreditService } from '../src/credits/service';
import type { OutboxRelay } from '../src/platform/outbox/relay';
import type { PromptReconciler } from '../src/prompt/reconciler';
import type { RunReconciler } from '../src/runs/reconciler';

export function createMaintenanceActivities(deps: {
  outbox: OutboxRelay;
  services: { promptReconciler: PromptReconciler; credits: CreditService; runReconciler: RunReconciler };
}) {
  return {
    /**
     * Delivers outbox rows the API's fast path missed (for example after a crash), dead-letters
     * rows out of attempts and purges delivered rows past their retention.
     */
    async sweepOutbox(input: { minAgeSeconds: number }) {
      return deps.outbox.sweep(input.minAgeSeconds, () => heartbeat());
    },

    /** Refunds and undoes prompts whose workflow was terminated or timed out (no compensation ran). */
    async settleAbandonedPrompts(input: { minAgeSeconds: number }) {
      return deps.services.promptReconciler.settleAll(input);
    },

    /** Resumes runs whose workflow closed or never started (settles those lost twice); says what it did. */
    async reconcileRuns(input: { minAgeSeconds: number }) {
      return deps.services.runReconciler.reconcileAll(input, () => heartbeat());
    },

    /** Refunds reservations (searches, embeddings) still pending after `minAgeSeconds`: their work died. */
    async reconcileCredits(input: { minAgeSeconds: number }) {
      return deps.services.credits.reconcile({ ...input, onWorkspace: () => heartbeat() });
    },
  };
}
