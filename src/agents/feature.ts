import type { Config } from '../platform/config';
import type { UnitOfWork } from '../platform/db/unit-of-work';
import type { Logger } from '../platform/logger';
import type { OutboxRelay } from '../platform/outbox/relay';
import type { TemporalHandle } from '../platform/temporal/connection';
import type { MaintenanceSchedule } from '../platform/temporal/schedules';
import { agentCapabilities } from './capabilities';
import { refuseJoiningClaims } from './edge-guard';
import { AgentClaim, AgentFailureCluster, AgentSession } from './entities';
import { sessionFailed } from './events';
import { startFailureClustering } from './outbox-handler';
import { createSessionSweeper } from './sweeper';
import { agentSessionSweepWorkflow } from './workflow';

/** Agent sessions, claims and failure clusters: tools only, no routes of their own. */
export const agentsFeature = {
  name: 'agents',
  services: {
    /** Expires agent sessions that missed their heartbeat (the sweeper schedule). */
    sessionSweeper: (ctx: { uow: UnitOfWork; logger: Logger; config: Pick<Config, 'AGENT_SESSION_TTL_SECONDS'> }) =>
      createSessionSweeper({ uow: ctx.uow, ttlSeconds: ctx.config.AGENT_SESSION_TTL_SECONDS, logger: ctx.logger }),
  },
  entities: [AgentSession, AgentClaim, AgentFailureCluster],
  events: [sessionFailed],
  // An agent session ended failed with an error signature: cluster it.
  outboxHandlers: (temporal: TemporalHandle) => [startFailureClustering(temporal)],
  // No CONTAINS edge joins two sessions' claims, whoever writes it (the graph runs it before each edge).
  edgeGuards: [refuseJoiningClaims],
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
