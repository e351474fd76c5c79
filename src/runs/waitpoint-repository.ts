// The SQL of waitpoints (issue 40 item 3; the rules are `waitpoints.ts`): a wait step's row, made once
// per step, read and settled by the run's workflow, completed by the API or by the run it awaits.
import type { EntityManager } from 'typeorm';
import { queryFirst, queryRows } from '../platform/db/query';

export type WaitpointKind = 'sleep' | 'event' | 'run';
export type WaitpointStatus = 'waiting' | 'completed' | 'timed_out' | 'cancelled';

export interface WaitpointRow {
  id: string;
  workspace_id: string;
  execution_id: string;
  step_no: number;
  kind: WaitpointKind;
  name: string | null;
  status: WaitpointStatus;
  output_schema: Record<string, unknown> | null;
  output: unknown;
  awaited_execution_id: string | null;
  expires_at: Date | null;
  completed_by: string | null;
  created_at: Date;
  completed_at: Date | null;
}

const COLUMNS = `id, workspace_id, execution_id, step_no, kind, name, status, output_schema, output,
  awaited_execution_id, expires_at, completed_by, created_at, completed_at`;
/** The same, of the waitpoint aliased `w` in a join. */
const COLUMNS_OF_W = COLUMNS.split(',')
  .map((column) => `w.${column.trim()}`)
  .join(', ');

/**
 * The step's waitpoint, made on its first call. A retried call finds it; while the step has not
 * shown its token yet (its output still empty) an event waitpoint takes the new token's hash, so
 * the token a retry answers is the one that works. `fresh_token`: this call's token is the live one.
 */
export const upsertWaitpoint = (
  m: EntityManager,
  row: {
    workspaceId: string;
    executionId: string;
    stepNo: number;
    kind: WaitpointKind;
    name: string | null;
    outputSchema: Record<string, unknown> | null;
    awaitedExecutionId: string | null;
    tokenHash: string | null;
    seconds: number | null;
  },
) =>
  queryFirst<WaitpointRow & { fresh_token: boolean }>(
    m,
    `INSERT INTO waitpoints (workspace_id, execution_id, step_no, kind, name, output_schema, awaited_execution_id,
       token_hash, expires_at)
     VALUES ($1, $2, $3, $4, $5, $6, $7, $8,
       CASE WHEN $9::integer IS NULL THEN NULL ELSE now() + make_interval(secs => $9::integer) END)
     ON CONFLICT (execution_id, step_no) DO UPDATE SET token_hash = CASE
       WHEN waitpoints.status = 'waiting' AND waitpoints.kind = 'event' AND (SELECT s.output IS NULL FROM run_steps s
         WHERE s.execution_id = waitpoints.execution_id AND s.step_no = waitpoints.step_no)
       THEN EXCLUDED.token_hash ELSE waitpoints.token_hash END
     RETURNING ${COLUMNS}, token_hash IS NOT DISTINCT FROM $8 AND $8 IS NOT NULL AS fresh_token`,
    [
      row.workspaceId,
      row.executionId,
      row.stepNo,
      row.kind,
      row.name,
      row.outputSchema ? JSON.stringify(row.outputSchema) : null,
      row.awaitedExecutionId,
      row.tokenHash,
      row.seconds,
    ],
  ).then((found) => found!);

export const findWaitpointOfStep = (m: EntityManager, executionId: string, stepNo: number) =>
  queryFirst<WaitpointRow>(m, `SELECT ${COLUMNS} FROM waitpoints WHERE execution_id = $1 AND step_no = $2`, [
    executionId,
    stepNo,
  ]);

export const findWaitpoint = (m: EntityManager, id: string) =>
  queryFirst<WaitpointRow>(m, `SELECT ${COLUMNS} FROM waitpoints WHERE id = $1`, [id]);

/** The waitpoint, locked for its completion; undefined when this workspace has none by that id. */
export const lockWaitpoint = (m: EntityManager, id: string) =>
  queryFirst<WaitpointRow>(m, `SELECT ${COLUMNS} FROM waitpoints WHERE id = $1 FOR UPDATE`, [id]);

/** The waitpoint a token belongs to (a hash lookup under the workspace's RLS). */
export const findWaitpointByToken = (m: EntityManager, tokenHash: string) =>
  queryFirst<WaitpointRow>(m, `SELECT ${COLUMNS} FROM waitpoints WHERE token_hash = $1`, [tokenHash]);

/** The workspace of a waiting waitpoint's token (a definer function: the request has no workspace yet). */
export const tokenWorkspace = async (m: EntityManager, tokenHash: string) =>
  (
    await queryFirst<{ workspace_id: string | null }>(m, `SELECT weft_waitpoint_token_workspace($1) AS workspace_id`, [
      tokenHash,
    ])
  )?.workspace_id ?? null;

/**
 * waiting → `status` with its output (its token's hash stays, so a second use is told it is spent).
 * Undefined when it was not waiting, or (`due`) when its time has not come on the database's clock.
 */
export const settleWaitpoint = (
  m: EntityManager,
  id: string,
  status: Exclude<WaitpointStatus, 'waiting'>,
  output: unknown,
  completedBy: string | null = null,
  due = false,
) =>
  queryFirst<WaitpointRow>(
    m,
    `UPDATE waitpoints SET status = $2, output = $3, completed_by = $4, completed_at = now()
     WHERE id = $1 AND status = 'waiting' AND (NOT $5 OR expires_at <= now()) RETURNING ${COLUMNS}`,
    [id, status, JSON.stringify(output ?? null), completedBy, due],
  );

/**
 * The waiting `run` waitpoints of other runs that await `executionId`, their runs' rows locked first
 * (the order every writer of a waitpoint takes: its run, then it), each with its run's status.
 */
export async function waitersOf(m: EntityManager, executionId: string) {
  await queryRows(
    m,
    `SELECT id FROM run_executions WHERE id IN (SELECT execution_id FROM waitpoints
       WHERE awaited_execution_id = $1 AND status = 'waiting') ORDER BY id FOR NO KEY UPDATE`,
    [executionId],
  );
  return queryRows<WaitpointRow & { run_status: string }>(
    m,
    `SELECT ${COLUMNS_OF_W}, e.status AS run_status
     FROM waitpoints w JOIN run_executions e ON e.id = w.execution_id
     WHERE w.awaited_execution_id = $1 AND w.status = 'waiting' FOR UPDATE OF w`,
    [executionId],
  );
}

/** Newest first. */
export const listWaitpoints = (
  m: EntityManager,
  filter: { status?: WaitpointStatus; executionId?: string },
  limit: number,
) =>
  queryRows<WaitpointRow>(
    m,
    `SELECT ${COLUMNS} FROM waitpoints
     WHERE ($1::text IS NULL OR status = $1) AND ($2::uuid IS NULL OR execution_id = $2)
     ORDER BY created_at DESC, id DESC LIMIT $3`,
    [filter.status ?? null, filter.executionId ?? null, limit],
  );
