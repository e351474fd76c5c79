import { defineWorkflow } from '../platform/temporal/contract';
import type { WorkspaceSweepInput, WorkspaceSweepResult } from '../platform/temporal/sweeps';

/** Nightly: applies the importance decay in every workspace (the `importance-decay` schedule). */
export const importanceDecayWorkflow = defineWorkflow<[WorkspaceSweepInput], WorkspaceSweepResult>({
  type: 'importanceDecayWorkflow',
  id: () => 'importance-decay',
});
