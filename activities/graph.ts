import { heartbeat, log } from '@temporalio/activity';
import type { DataSource } from 'typeorm';
import type { ImportanceService } from '../src/importance/service';
import { workspaceIdsAfter } from '../src/tenancy/repository';
import type { TypeCatalogService } from '../src/type-catalog/service';

export interface GraphActivityDeps {
  dataSource: DataSource;
  typeCatalog: TypeCatalogService;
  importance: ImportanceService;
  /** Nodes per transaction of the importance decay (the service's default when unset). */
  nodesPerPage?: number;
  /** How often a workspace's work heartbeats while a single statement runs; well inside the 1-minute timeout. */
  heartbeatEveryMs?: number;
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

type Progress = Record<string, number>;

/**
 * Runs `work` for one batch of workspaces, each in its own unit(s) of work, and heartbeats all
 * along: with the work's own progress (`report`), on a timer while one long statement runs (a
 * big workspace's recount), and after each workspace. Without that, a pass longer than the
 * heartbeat timeout would be retried while still running. A workspace that fails is logged and
 * skipped: one bad workspace must not keep every workspace after it from its pass, nor have the
 * whole batch retried.
 */
async function forBatch(
  deps: GraphActivityDeps,
  job: string,
  batch: WorkspaceBatch,
  work: (workspaceId: string, report: (progress: Progress) => void) => Promise<unknown>,
): Promise<WorkspaceBatchResult> {
  const ids = await workspaceIdsAfter(deps.dataSource, batch.after, batch.size);
  let failed = 0;
  for (const [index, workspaceId] of ids.entries()) {
    let details: Record<string, string | number> = { workspace: workspaceId, done: index, failed };
    const report = (progress: Progress) => {
      details = { ...details, ...progress };
      heartbeat(details);
    };
    const timer = setInterval(() => heartbeat(details), deps.heartbeatEveryMs ?? 10_000);
    try {
      await work(workspaceId, report);
    } catch (error) {
      failed += 1;
      log.warn(`${job} failed in a workspace; skipped until the next run`, {
        workspaceId,
        error: error instanceof Error ? error.message : String(error),
      });
    } finally {
      clearInterval(timer);
    }
    heartbeat({ done: index + 1, failed });
  }
  return { processed: ids.length, failed, last: ids.at(-1) ?? null };
}

export function createGraphActivities(deps: GraphActivityDeps) {
  return {
    /** knowledge-graph-service-api.md §2.3: the daily catalog recompute, for a batch of workspaces. */
    refreshTypeCatalogs: (batch: WorkspaceBatch) =>
      forBatch(deps, 'type-catalog refresh', batch, (id) => deps.typeCatalog.refresh(id)),
    /**
     * knowledge-graph-service-api.md §2.7: the nightly importance decay, for a batch of workspaces; it reports every
     * page of nodes.
     */
    decayImportance: (batch: WorkspaceBatch) =>
      forBatch(deps, 'importance decay', batch, (id, report) =>
        deps.importance.decayWorkspace(id, { nodesPerPage: deps.nodesPerPage, onProgress: report }),
      ),
  };
}
