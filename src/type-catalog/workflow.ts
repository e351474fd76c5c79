import { defineWorkflow } from '../platform/temporal/contract';
import type { WorkspaceSweepInput, WorkspaceSweepResult } from '../platform/temporal/sweeps';

/** Daily: recomputes every workspace's type catalog (the `type-catalog-refresh` schedule). */
export const typeCatalogRefreshWorkflow = defineWorkflow<[WorkspaceSweepInput], WorkspaceSweepResult>({
  type: 'typeCatalogRefreshWorkflow',
  id: () => 'type-catalog-refresh',
});
