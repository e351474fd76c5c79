import { readOntologyConfig } from '../ontology-config/service';
import type { UnitOfWork } from '../platform/db/unit-of-work';
import { rescoreLiveNodes } from './repository';

/** Nodes per transaction of the nightly decay: short locks, and progress to report between pages. */
const NODES_PER_PAGE = 5_000;

export interface DecayOptions {
  nodesPerPage?: number;
  /** Called after every page, with the running totals (the activity heartbeats with them). */
  onProgress?: (progress: { nodes: number; updated: number }) => void;
}

export function createImportanceService(deps: { uow: UnitOfWork }) {
  return {
    /**
     * The nightly decay of one workspace: every live node's importance is recomputed from the
     * formula (knowledge-graph-service-api.md §2.7) with the workspace's settings, a page of nodes per transaction.
     * Recomputing rather than multiplying the stored score keeps a retried or repeated run (or a
     * page a writer touched meanwhile) from decaying twice.
     */
    async decayWorkspace(workspaceId: string, options: DecayOptions = {}): Promise<{ updated: number }> {
      const limit = options.nodesPerPage ?? NODES_PER_PAGE;
      const { importance } = await deps.uow({ workspaceId }, readOntologyConfig);
      let after: string | null = null;
      let nodes = 0;
      let updated = 0;
      for (;;) {
        const page = await deps.uow({ workspaceId }, (m) => rescoreLiveNodes(m, importance, { after, limit }));
        nodes += page.scanned;
        updated += page.updated;
        options.onProgress?.({ nodes, updated });
        if (page.last === null || page.scanned < limit) return { updated };
        after = page.last;
      }
    },
  };
}

export type ImportanceService = ReturnType<typeof createImportanceService>;
