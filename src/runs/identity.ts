import type { EntityManager } from 'typeorm';
import { queryFirst } from '../platform/db/query';
import type { RunError, RunExecution } from './entities';

/**
 * Whether the identity a run acts as may still act: its user is a member of the workspace, and the
 * credential that dispatched it is neither revoked nor past its expiry. A user JWT's revocation row
 * is purged once the JWT has expired, so the expiry stored at dispatch is checked as well.
 */
const IDENTITY_LIVE_SQL = `SELECT (
    EXISTS (SELECT 1 FROM memberships WHERE workspace_id = $2::uuid AND user_id = $3::uuid)
    AND ($5::timestamptz IS NULL OR $5::timestamptz > now())
    AND CASE WHEN $4::text = 'user_jwt'
      THEN NOT EXISTS (SELECT 1 FROM revoked_tokens WHERE jti = $1::uuid)
      ELSE EXISTS (SELECT 1 FROM api_keys k WHERE k.id = $1::uuid AND k.workspace_id = $2::uuid
        AND k.user_id = $3::uuid AND k.kind = $4::text AND k.revoked_at IS NULL
        AND (k.expires_at IS NULL OR k.expires_at > now()))
    END) AS live`;

/**
 * Re-checks a run's identity inside the caller's transaction (issue 23 item 3: before each step
 * and each model turn). Key rows are visible to their user only, so the transaction acts as the
 * run's user from here on, in the run's workspace as before.
 */
export async function runIdentityLive(m: EntityManager, run: RunExecution): Promise<boolean> {
  await m.query(`SELECT set_config('app.user_id', $1, true)`, [run.userId]);
  const { credential } = run.principal;
  const row = await queryFirst<{ live: boolean }>(m, IDENTITY_LIVE_SQL, [
    credential.id ?? null,
    run.workspaceId,
    run.userId,
    credential.kind,
    credential.expires_at ?? null,
  ]);
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
