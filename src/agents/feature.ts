import type { UnitOfWork } from '../platform/db/unit-of-work';
import type { OutboxRelay } from '../platform/outbox/relay';
import type { TemporalHandle } from '../platform/temporal/connection';
import type { MaintenanceSchedule } from '../platform/temporal/schedules';
import { agentCapabilities } from './capabilities';
import { AgentClaim, AgentFailureCluster, AgentSession } from './entities';
import { sessionFailed } from './events';
import { startFailureClustering } from './outbox-handler';
import { agentSessionSweepWorkflow } from './workflow';

/** Agent sessions, claims and failure clusters: tools only, no routes of their own. */
export const agentsFeature = {
  name: 'agents',
  entities: [AgentSession, AgentClaim, AgentFailureCluster],
  events: [sessionFailed],
  // An agent session ended failed with an error signature: cluster it.
  outboxHandlers: (temporal: TemporalHandle) => [startFailureClustering(temporal)],
  capabilities: (deps: { uow: UnitOfWork; outbox: Pick<OutboxRelay, 'kick'>; sessionTtlSeconds: number }) =>
    agentCapabilities(deps),
  schedules: [
    {
      name: 'agent-session-sweep',
      description:
        'Every 30 s: expires agent sessions whose last heartbeat is older than AGENT_SESSION_TTL_SECONDS ' +
        'and abandons their claims.',
      workflow: agentSessionSweepWorkflow,
      args: [{}],
      spec: { intervals: [{ every: '30 seconds' }] },
    },
  ] satisfies MaintenanceSchedule[],
};
