import type { EntityManager } from 'typeorm';
import { CREDENTIAL_LIVE_SQL, credentialLiveParams } from '../platform/auth/credential-liveness';
import { queryFirst } from '../platform/db/query';
import type { RunError, RunExecution } from './entities';

/**
 * Re-checks a run's identity (`CREDENTIAL_LIVE_SQL`) inside the caller's transaction (issue 23
 * item 3: before each step and each model turn). Key rows are visible to their user only, so the
 * transaction acts as the run's user from here on, in the run's workspace as before.
 */
export async function runIdentityLive(m: EntityManager, run: RunExecution): Promise<boolean> {
  await m.query(`SELECT set_config('app.user_id', $1, true)`, [run.userId]);
  const { credential } = run.principal;
  const row = await queryFirst<{ live: boolean }>(
    m,
    CREDENTIAL_LIVE_SQL,
    credentialLiveParams({
      workspaceId: run.workspaceId,
      userId: run.userId,
      kind: credential.kind,
      credentialId: credential.id ?? null,
      expiresAt: credential.expires_at ?? null,
    }),
  );
  return row?.live === true;
}

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
