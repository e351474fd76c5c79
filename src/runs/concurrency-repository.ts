import type { EntityManager } from 'typeorm';
import { queryFirst, queryRows } from '../platform/db/query';
import type { RunConcurrency } from './control-schemas';
import type { RunStatus } from './entities';
import type { RunDispatched } from './events';

// The SQL of concurrency keys (issue 26 part 4; the rules are `concurrency.ts`): the key's lock, its
// active and waiting runs, and a dispatch's control columns.

/** Serialises every decision about one (workspace, key) until the transaction ends. */
export const lockConcurrencyKey = (m: EntityManager, workspaceId: string, key: string) =>
  queryFirst(m, `SELECT pg_advisory_xact_lock(hashtextextended('run-concurrency:' || $1 || ':' || $2, 0))`, [
    workspaceId,
    key,
  ]);

const ACTIVE = `status IN ('QUEUED', 'RUNNING', 'AWAITING_APPROVAL', 'WAITING')`;

/** The key's active runs (those holding a slot, one waiting at the priority gate too), oldest dispatch first. */
export const activeRuns = (m: EntityManager, workspaceId: string, key: string) =>
  queryRows<{ id: string }>(
    m,
    `SELECT id FROM run_executions WHERE workspace_id = $1 AND concurrency_key = $2 AND ${ACTIVE}
       AND (held_start IS NULL OR flow_hold = 'priority') ORDER BY dispatch_seq`,
    [workspaceId, key],
  );

/** The key's oldest run waiting for a slot (not one waiting at the priority gate, which has its slot). */
export const oldestWaiting = (m: EntityManager, workspaceId: string, key: string) =>
  queryFirst<{ id: string; concurrency_limit: number }>(
    m,
    `SELECT id, concurrency_limit FROM run_executions
     WHERE workspace_id = $1 AND concurrency_key = $2 AND status = 'QUEUED' AND held_start IS NOT NULL
       AND flow_hold IS NULL
     ORDER BY dispatch_seq LIMIT 1`,
    [workspaceId, key],
  );

/** Stores a dispatch's control columns; a held run keeps the event its start will enqueue. */
export async function recordControl(
  m: EntityManager,
  executionId: string,
  control: { tags: string[]; concurrency?: RunConcurrency; held?: RunDispatched },
): Promise<void> {
  await queryRows(
    m,
    `UPDATE run_executions SET tags = $2, concurrency_key = $3, concurrency_limit = $4, concurrency_policy = $5,
       held_start = $6 WHERE id = $1`,
    [
      executionId,
      control.tags,
      control.concurrency?.key ?? null,
      control.concurrency?.limit ?? null,
      control.concurrency?.policy ?? null,
      control.held ? JSON.stringify(control.held) : null,
    ],
  );
}

/** The run's workspace, concurrency key (null without one) and status. */
export const concurrencyKeyOf = (m: EntityManager, executionId: string) =>
  queryFirst<{ workspace_id: string; concurrency_key: string | null; status: RunStatus }>(
    m,
    `SELECT workspace_id, concurrency_key, status FROM run_executions WHERE id = $1`,
    [executionId],
  );
