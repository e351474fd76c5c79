import { heartbeat } from '@temporalio/activity';
import { clusterFailedSession } from '../src/agents/service';
import type { SessionSweeper } from '../src/agents/sweeper';
import type { FailureClusterInput } from '../src/agents/workflow';
import type { KeyPurger } from '../src/capabilities/key-purge';
import type { KeyPurgeInput, KeyPurgeResult } from '../src/capabilities/workflow';
import type { CodeBatchPurger } from '../src/code/batch-purge';
import type { ConnectorUpkeep } from '../src/connectors/upkeep';
import type { UnitOfWork } from '../src/platform/db/unit-of-work';

/** The agent and capability workflows' steps: thin adapters over their services. */
export function createAgentActivities(deps: {
  uow: UnitOfWork;
  services: {
    sessionSweeper: SessionSweeper;
    capabilityKeys: KeyPurger;
    codeBatches: CodeBatchPurger;
    connectorUpkeep: ConnectorUpkeep;
  };
}) {
  return {
    /** Counts one failed session into its cluster; exactly once per session however often it runs. */
    clusterFailedSession: (input: FailureClusterInput) =>
      deps.uow({ workspaceId: input.workspaceId }, (m) => clusterFailedSession(m, input.workspaceId, input.sessionId)),

    /** Expires sessions that missed their heartbeat and abandons their claims, in every workspace. */
    expireStaleSessions: () => deps.services.sessionSweeper.sweep(() => heartbeat()),

    /**
     * Deletes Idempotency-Keys older than the replay window, then stored code batches older than a
     * day (code's own purge, which this one schedule has run since code batches were stored), then
     * the connectors' expired call ledger rows and unpinned old versions.
     */
    purgeIdempotencyKeys: async (input: KeyPurgeInput): Promise<KeyPurgeResult> => {
      const purged = await deps.services.capabilityKeys.purge(input.batchSize, () => heartbeat());
      const codeBatches = await deps.services.codeBatches.purge(input.batchSize, () => heartbeat());
      const connectors = await deps.services.connectorUpkeep.purge(input.batchSize, () => heartbeat());
      return { purged, codeBatches, connectorCalls: connectors.calls, connectorVersions: connectors.versions };
    },
  };
}
