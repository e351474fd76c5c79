import { continueAsNew, proxyActivities } from '@temporalio/workflow';
import type { Activities } from '../activities';
import type { WorkspaceBatchResult } from '../activities/graph';
import type { WorkspaceSweepInput, WorkspaceSweepResult } from '../src/platform/temporal/sweeps';
import { maintenanceActivity } from './activity-options';

const { refreshTypeCatalogs, decayImportance } = proxyActivities<Activities>(maintenanceActivity);

const BATCH = 50;
// Enough batches per run to keep the history small; the rest continues as a new run.
const BATCHES_PER_RUN = 200;

async function sweep(
  input: WorkspaceSweepInput,
  step: (batch: { after: string | null; size: number }) => Promise<WorkspaceBatchResult>,
  self: (input: WorkspaceSweepInput) => Promise<WorkspaceSweepResult>,
): Promise<WorkspaceSweepResult> {
  const size = input.batchSize ?? BATCH;
  let after = input.after ?? null;
  let workspaces = 0;
  let failed = input.failed ?? 0;
  for (let i = 0; i < BATCHES_PER_RUN; i++) {
    const result = await step({ after, size });
    workspaces += result.processed;
    failed += result.failed;
    if (result.processed < size || result.last === null) return { workspaces, failed };
    after = result.last;
  }
  return continueAsNew<typeof self>({ after, batchSize: size, failed });
}

/** Daily: recomputes every workspace's type catalog (knowledge-graph-service-api.md §2.3). */
export async function typeCatalogRefreshWorkflow(input: WorkspaceSweepInput = {}): Promise<WorkspaceSweepResult> {
  return sweep(input, refreshTypeCatalogs, typeCatalogRefreshWorkflow);
}

/** Nightly: applies the importance decay in every workspace (knowledge-graph-service-api.md §2.7). */
export async function importanceDecayWorkflow(input: WorkspaceSweepInput = {}): Promise<WorkspaceSweepResult> {
  return sweep(input, decayImportance, importanceDecayWorkflow);
}
