import { heartbeat } from '@temporalio/activity';
import { clusterFailedSession } from '../src/agents/service';
import type { SessionSweeper } from '../src/agents/sweeper';
import type { FailureClusterInput } from '../src/agents/workflow';
import type { KeyPurger } from '../src/capabilities/key-purge';
import type { KeyPurgeInput } from '../src/capabilities/workflow';
import type { UnitOfWork } from '../src/platform/db/unit-of-work';

/** The agent and capability workflows' steps: thin adapters over their services. */
export function createAgentActivities(deps: {
  uow: UnitOfWork;
  services: { sessionSweeper: SessionSweeper; capabilityKeys: KeyPurger };
}) {
  return {
    /** Counts one failed session into its cluster; exactly once per session however often it runs. */
    clusterFailedSession: (input: FailureClusterInput) =>
      deps.uow({ workspaceId: input.workspaceId }, (m) => clusterFailedSession(m, input.workspaceId, input.sessionId)),

    /** Expires sessions that missed their heartbeat and abandons their claims, in every workspace. */
    expireStaleSessions: () => deps.services.sessionSweeper.sweep(() => heartbeat()),

    /** Deletes Idempotency-Keys older than the replay window, and stored code batches older than a day. */
    purgeIdempotencyKeys: (input: KeyPurgeInput) =>
      deps.services.capabilityKeys.purge(input.batchSize, () => heartbeat()),
  };
}
