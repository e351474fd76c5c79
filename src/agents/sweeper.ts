import type { UnitOfWork } from '../platform/db/unit-of-work';
import { staleSessionWorkspaces } from './repository';
import { expireStaleSessions } from './service';
import type { SessionSweepResult } from './workflow';

/**
 * The session sweeper: finds the workspaces with an overdue session (without reading any row), then
 * expires that workspace's overdue sessions and abandons their claims in its own unit of work.
 */
export function createSessionSweeper(deps: { uow: UnitOfWork; ttlSeconds: number }) {
  const { uow, ttlSeconds } = deps;
  return {
    ttlSeconds,
    async sweep(onWorkspace: () => void = () => {}): Promise<SessionSweepResult> {
      const workspaceIds = await uow({}, (m) => staleSessionWorkspaces(m, ttlSeconds));
      const total: SessionSweepResult = { workspaces: workspaceIds.length, expired: 0, abandoned: 0 };
      for (const workspaceId of workspaceIds) {
        const swept = await uow({ workspaceId }, (m) => expireStaleSessions(m, ttlSeconds));
        total.expired += swept.expired;
        total.abandoned += swept.abandoned;
        onWorkspace();
      }
      return total;
    },
  };
}

export type SessionSweeper = ReturnType<typeof createSessionSweeper>;
