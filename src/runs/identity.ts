import type { EntityManager } from 'typeorm';
import { queryFirst } from '../platform/db/query';
import type { RunError, RunExecution } from './entities';

/**
 * Whether the run may still act as its stored identity (`weft_credential_live`, platform/auth): an SQL
 * expression over the run's row aliased `run`, so a step's first read carries it (issue 23 item 3, issue 27).
 */
export const RUN_IDENTITY_LIVE_SQL = `weft_credential_live(run.principal->'credential', run.workspace_id, run.user_id)`;

/** Re-checks a run's identity inside the caller's transaction (before each model turn), in one statement. */
export async function runIdentityLive(m: EntityManager, run: Pick<RunExecution, 'id'>): Promise<boolean> {
  const row = await queryFirst<{ live: boolean }>(
    m,
    `SELECT ${RUN_IDENTITY_LIVE_SQL} AS live FROM run_executions run WHERE run.id = $1`,
    [run.id],
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
