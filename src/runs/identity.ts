import type { EntityManager } from 'typeorm';
import { storedIdentityLive } from '../platform/auth/credential-liveness';
import type { RunError, RunExecution } from './entities';

/**
 * Re-checks a run's identity (`storedIdentityLive`) inside the caller's transaction (issue 23 item 3:
 * before each step and each model turn), in one statement.
 */
export const runIdentityLive = (m: EntityManager, run: RunExecution): Promise<boolean> =>
  storedIdentityLive(m, {
    workspaceId: run.workspaceId,
    userId: run.userId,
    kind: run.principal.credential.kind,
    credentialId: run.principal.credential.id ?? null,
    expiresAt: run.principal.credential.expires_at ?? null,
  });

/** How a run whose identity may no longer act ends: FAILED, at the step it was about to run (or none). */
export const credentialRevoked = (step: number | null): RunError => ({
  code: 'credential_revoked',
  message:
    'The credential this run acts as was revoked or has expired, or its user left the workspace; nothing more ran',
  step,
});

/** The dispatching credential's expiry as the run stores it (ISO), whatever form it came in. */
export const storedExpiry = (expiresAt: Date | string | null | undefined): string | null =>
  expiresAt ? new Date(expiresAt).toISOString() : null;
