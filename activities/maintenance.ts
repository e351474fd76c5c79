import type { OutboxRelay } from '../src/platform/outbox/relay';
import type { PromptReconciler } from '../src/prompt/reconciler';

export function createMaintenanceActivities(deps: {
  outbox: OutboxRelay;
  services: { promptReconciler: PromptReconciler };
}) {
  return {
    /** Delivers outbox rows the API's fast path missed (for example after a crash). */
    async sweepOutbox(input: { minAgeSeconds: number }) {
      return deps.outbox.sweep(input.minAgeSeconds);
    },

    /** Refunds and undoes prompts whose workflow was terminated or timed out (no compensation ran). */
    async settleAbandonedPrompts(input: { minAgeSeconds: number }) {
      return deps.services.promptReconciler.settleAll(input);
    },
  };
}
