import { defineWorkflow } from '../platform/temporal/contract';
import type { RunReconcileResult } from '../runs/reconciler';

/**
 * The maintenance workflows, started by the schedules in `schedules.ts` (which give each run the
 * schedule's id); the ids below are for a run an operator or a test starts by hand.
 */

export interface WorkspaceSweepInput {
  /** Resume after this workspace id (set by continue-as-new). */
  after?: string | null;
  batchSize?: number;
  /** Workspaces that failed in earlier runs of the same pass (carried over continue-as-new). */
  failed?: number;
}

export interface WorkspaceSweepResult {
  workspaces: number;
  /** Workspaces whose work failed and was skipped (logged by the activity). */
  failed: number;
}

export interface SweepInput {
  /** Rows younger than this belong to the fast path. */
  minAgeSeconds: number;
}

/** Every minute: the outbox safety net. */
export const outboxSweepWorkflow = defineWorkflow<[SweepInput], unknown>({
  type: 'outboxSweepWorkflow',
  id: () => 'outbox-sweep',
});

/** Every ten minutes: settles the reservations of prompts that ended without compensation. */
export const promptReconcileWorkflow = defineWorkflow<[SweepInput], unknown>({
  type: 'promptReconcileWorkflow',
  id: () => 'prompt-reconcile',
});

/** Every five minutes: resumes or settles runs whose `run-<id>` closed or never started (issue 24). */
export const runReconcileWorkflow = defineWorkflow<[SweepInput], RunReconcileResult>({
  type: 'runReconcileWorkflow',
  id: () => 'run-reconcile',
});

/** Daily: recomputes every workspace's type catalog. */
export const typeCatalogRefreshWorkflow = defineWorkflow<[WorkspaceSweepInput], WorkspaceSweepResult>({
  type: 'typeCatalogRefreshWorkflow',
  id: () => 'type-catalog-refresh',
});

/** Nightly: applies the importance decay in every workspace. */
export const importanceDecayWorkflow = defineWorkflow<[WorkspaceSweepInput], WorkspaceSweepResult>({
  type: 'importanceDecayWorkflow',
  id: () => 'importance-decay',
});
