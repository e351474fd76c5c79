import { proxyActivities } from '@temporalio/workflow';
import type { Activities } from '../activities';
import type { CreditsReconcileResult } from '../src/credits/workflow';
import type { SweepInput } from '../src/platform/temporal/sweeps';
import type { RunReconcileResult } from '../src/runs/workflow';
import { maintenanceActivity } from './activity-options';

const { sweepOutbox, settleAbandonedPrompts, reconcileCredits, reconcileRuns } =
  proxyActivities<Activities>(maintenanceActivity);

/**
 * Scheduled every minute: the outbox safety net (rows younger than `minAgeSeconds` belong to the
 * fast path), dead letters and the purge of delivered rows.
 */
export async function outboxSweepWorkflow(input: SweepInput) {
  return sweepOutbox(input);
}

/** Scheduled every ten minutes: settles the reservations of prompts that ended without compensation. */
export async function promptReconcileWorkflow(input: SweepInput) {
  return settleAbandonedPrompts(input);
}

/** Scheduled every five minutes: refunds reservations left pending by work that died. */
export async function creditsReconcileWorkflow(input: SweepInput): Promise<CreditsReconcileResult> {
  return reconcileCredits(input);
}

/**
 * Scheduled every five minutes: runs whose row is unfinished but whose workflow closed or never
 * started are resumed (or settled, when an operator ended them); the result says which.
 */
export async function runReconcileWorkflow(input: SweepInput): Promise<RunReconcileResult> {
  return reconcileRuns(input);
}
