import type { UnitOfWork } from '../platform/db/unit-of-work';
import type { Logger } from '../platform/logger';
import { forEachWorkspace, onePage } from '../platform/workspace-sweep';
import { staleSessionWorkspaces } from './repository';
import { expireStaleSessions } from './service';
import type { SessionSweepResult } from './workflow';

/**
 * The session sweeper: finds the workspaces with an overdue session (without reading any row), then
 * expires that workspace's overdue sessions and abandons their claims in its own unit of work.
 */
export function createSessionSweeper(deps: { uow: UnitOfWork; ttlSeconds: number; logger: Logger }) {
  const { uow, ttlSeconds, logger } = deps;
  return {
    ttlSeconds,
    async sweep(onWorkspace: () => void = () => {}): Promise<SessionSweepResult> {
      const total: SessionSweepResult = { workspaces: 0, expired: 0, abandoned: 0 };
      const swept = await forEachWorkspace(
        {
          job: 'session sweep',
          page: onePage(() => uow({}, (m) => staleSessionWorkspaces(m, ttlSeconds))),
          heartbeat: () => onWorkspace(),
          warn: (fields, message) => logger.warn(fields, message),
        },
        async (workspaceId) => {
          const outcome = await uow({ workspaceId }, (m) => expireStaleSessions(m, ttlSeconds));
          total.expired += outcome.expired;
          total.abandoned += outcome.abandoned;
        },
      );
      return { ...total, workspaces: swept.visited };
    },
  };
}

export type SessionSweeper = ReturnType<typeof createSessionSweeper>;
