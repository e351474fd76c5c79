import { heartbeat, log } from '@temporalio/activity';
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
  /** Workspaces whose work failed (logged and skipped); the next scheduled run tries them again. */
  failed: number;
  /** The last workspace handled; null when there was none left. */
  last: string | null;
}

/**
 * Runs `work` for one batch of workspaces, each in its own unit of work, heartbeating between
 * them. A workspace that fails is logged and skipped: one bad workspace must not keep every
 * workspace after it from its nightly pass, nor have the whole batch retried.
 */
async function forBatch(
  deps: GraphActivityDeps,
  job: string,
  batch: WorkspaceBatch,
  work: (workspaceId: string) => Promise<unknown>,
): Promise<WorkspaceBatchResult> {
  const ids = await workspaceIdsAfter(deps.dataSource, batch.after, batch.size);
  let failed = 0;
  for (const [index, workspaceId] of ids.entries()) {
    try {
      await work(workspaceId);
    } catch (error) {
      failed += 1;
      log.warn(`${job} failed in a workspace; skipped until the next run`, {
        workspaceId,
        error: error instanceof Error ? error.message : String(error),
      });
    }
    heartbeat({ done: index + 1, failed });
  }
  return { processed: ids.length, failed, last: ids.at(-1) ?? null };
}

export function createGraphActivities(deps: GraphActivityDeps) {
  return {
    /** Contract 2.3: the daily catalog recompute, for a batch of workspaces. */
    refreshTypeCatalogs: (batch: WorkspaceBatch) =>
      forBatch(deps, 'type-catalog refresh', batch, (id) => deps.typeCatalog.refresh(id)),
    /** Contract 2.7: the nightly importance decay, for a batch of workspaces. */
    decayImportance: (batch: WorkspaceBatch) =>
      forBatch(deps, 'importance decay', batch, (id) => deps.importance.decayWorkspace(id)),
  };
}
