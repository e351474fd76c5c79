import { heartbeat, log } from '@temporalio/activity';
import type { DataSource } from 'typeorm';
import type { ImportanceService } from '../src/importance/service';
import type { SweepProgress } from '../src/platform/workspace-sweep';
import { forEachWorkspace } from '../src/platform/workspace-sweep';
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

/**
 * Runs `work` for one batch of workspaces (src/platform/workspace-sweep.ts: a failing workspace is
 * logged and skipped) and heartbeats all along: with the work's own progress (`report`), on a timer
 * while one long statement runs (a big workspace's recount), and after each workspace. Without
 * that, a pass longer than the heartbeat timeout would be retried while still running.
 */
async function forBatch(
  deps: GraphActivityDeps,
  job: string,
  batch: WorkspaceBatch,
  work: (workspaceId: string, report: (progress: SweepProgress) => void) => Promise<unknown>,
): Promise<WorkspaceBatchResult> {
  const swept = await forEachWorkspace(
    {
      job,
      page: (after) => workspaceIdsAfter(deps.dataSource, after, batch.size),
      after: batch.after,
      onePageOnly: true,
      heartbeat: (progress) => heartbeat(progress),
      heartbeatEveryMs: deps.heartbeatEveryMs ?? 10_000,
      warn: (fields, message) => log.warn(message, fields),
    },
    work,
  );
  return { processed: swept.visited, failed: swept.failed, last: swept.last };
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
