import { heartbeat } from '@temporalio/activity';
import type { DataSource } from 'typeorm';
import type { ImportanceService } from '../src/importance/service';
import { workspaceIdsAfter } from '../src/tenancy/repository';
import type { TypeCatalogService } from '../src/type-catalog/service';

export interface GraphActivityDeps {
  dataSource: DataSource;
  typeCatalog: TypeCatalogService;
  importance: ImportanceService;
}

export interface WorkspaceBatch {
  /** Resume after this workspace id; null starts from the first. */
  after: string | null;
  size: number;
}

export interface WorkspaceBatchResult {
  processed: number;
  /** The last workspace handled; null when there was none left. */
  last: string | null;
}

/** Runs `work` for one batch of workspaces, each in its own unit of work, heartbeating between them. */
async function forBatch(
  deps: GraphActivityDeps,
  batch: WorkspaceBatch,
  work: (workspaceId: string) => Promise<unknown>,
) {
  const ids = await workspaceIdsAfter(deps.dataSource, batch.after, batch.size);
  for (const [index, workspaceId] of ids.entries()) {
    await work(workspaceId);
    heartbeat({ done: index + 1 });
  }
  return { processed: ids.length, last: ids.at(-1) ?? null } satisfies WorkspaceBatchResult;
}

export function createGraphActivities(deps: GraphActivityDeps) {
  return {
    /** Contract 2.3: the daily catalog recompute, for a batch of workspaces. */
    refreshTypeCatalogs: (batch: WorkspaceBatch) => forBatch(deps, batch, (id) => deps.typeCatalog.refresh(id)),
    /** Contract 2.7: the nightly importance decay, for a batch of workspaces. */
    decayImportance: (batch: WorkspaceBatch) => forBatch(deps, batch, (id) => deps.importance.decayWorkspace(id)),
  };
}
