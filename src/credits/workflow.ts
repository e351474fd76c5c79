import { defineWorkflow } from '../platform/temporal/contract';
import type { SweepInput } from '../platform/temporal/sweeps';

export interface CreditsReconcileResult {
  workspaces: number;
  refunded: number;
}

/**
 * Scheduled (`credits-reconcile`): refunds every reservation still `pending` after `minAgeSeconds`,
 * whose work (a search, a node's embedding) died between the charge and its settlement.
 */
export const creditsReconcileWorkflow = defineWorkflow<[SweepInput], CreditsReconcileResult>({
  type: 'creditsReconcileWorkflow',
  id: () => 'credits-reconcile',
});
