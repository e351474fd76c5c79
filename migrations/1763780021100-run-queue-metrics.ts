import type { MigrationInterface, QueryRunner } from 'typeorm';

/** How many workspaces the top-k families name (by hash), and the start-delay window in minutes. */
const TOP = 5;
const WINDOW = 15;

/** The snapshot as migration 1763780012000 left it. */
const BEFORE = `
    SELECT 'runs', status, agent, count(*)::float8 FROM run_executions GROUP BY status, agent
    UNION ALL
    SELECT 'approvals_pending', '', '', count(*)::float8 FROM run_approvals WHERE status = 'pending'
    UNION ALL
    SELECT 'approvals_oldest_age', '', '',
           COALESCE(extract(epoch FROM now() - min(requested_at)), 0)::float8
      FROM run_approvals WHERE status = 'pending'
    UNION ALL
    SELECT 'outbox_backlog', '', '', count(*)::float8
      FROM outbox WHERE dispatched_at IS NULL AND dead_lettered_at IS NULL
    UNION ALL
    SELECT 'outbox_lag', '', '', COALESCE(extract(epoch FROM now() - min(created_at)), 0)::float8
      FROM outbox WHERE dispatched_at IS NULL AND dead_lettered_at IS NULL
    UNION ALL
    SELECT 'outbox_dead_letters', '', '', count(*)::float8 FROM outbox WHERE dead_lettered_at IS NOT NULL
    UNION ALL
    SELECT 'webhook_deliveries', outcome, '', count(*)::float8 FROM (
      SELECT CASE
               WHEN duplicate_of IS NOT NULL THEN 'duplicate'
               WHEN status_code BETWEEN 200 AND 299 THEN 'accepted'
               WHEN status_code = 429 THEN 'rate_limited'
               WHEN status_code BETWEEN 400 AND 499 THEN 'refused'
               ELSE 'failed'
             END AS outcome
        FROM webhook_deliveries) d GROUP BY outcome
    UNION ALL
    SELECT 'credits_reserved', kind, '', sum(-amount)::float8 FROM credit_ledger WHERE amount < 0 GROUP BY kind
    UNION ALL
    SELECT 'credits_pending', kind, '', sum(-amount)::float8
      FROM credit_ledger WHERE amount < 0 AND settlement = 'pending' GROUP BY kind
    UNION ALL
    SELECT 'credits_refunded', kind, '', sum(amount)::float8
      FROM credit_ledger WHERE amount > 0 AND linked_event_id IS NOT NULL GROUP BY kind`;

/** The snapshot as this migration leaves it (migration 1763780021200 builds on it). */
export const QUEUE_SNAPSHOT = `${BEFORE}
    UNION ALL
    -- Issue 43 item 5: runs waiting to start (QUEUED), over the workspaces that have any, as
    -- percentiles and the top ${TOP} by a hash of the workspace id (never the id itself).
    SELECT 'runs_queued_workspaces', q, '', v FROM (
      SELECT percentile_cont(0.5) WITHIN GROUP (ORDER BY n) AS p50,
             percentile_cont(0.95) WITHIN GROUP (ORDER BY n) AS p95, max(n)::float8 AS mx
        FROM (SELECT count(*)::float8 AS n FROM run_executions WHERE status = 'QUEUED' GROUP BY workspace_id) w
    ) s CROSS JOIN LATERAL (VALUES ('p50', s.p50), ('p95', s.p95), ('max', s.mx)) AS v(q, v) WHERE v IS NOT NULL
    UNION ALL
    SELECT 'runs_queued_top', rank::text, hash, n FROM (
      SELECT row_number() OVER (ORDER BY count(*) DESC, workspace_id) AS rank,
             left(md5(workspace_id::text), 12) AS hash, count(*)::float8 AS n
        FROM run_executions WHERE status = 'QUEUED' GROUP BY workspace_id
    ) t WHERE rank <= ${TOP}
    UNION ALL
    -- How long runs created in the last ${WINDOW} minutes waited from dispatch to their first step's start.
    SELECT 'runs_start_delay', q, '', v FROM (
      SELECT percentile_cont(0.5) WITHIN GROUP (ORDER BY d) AS p50,
             percentile_cont(0.95) WITHIN GROUP (ORDER BY d) AS p95, max(d) AS mx
        FROM (SELECT extract(epoch FROM min(s.started_at) - e.created_at)::float8 AS d
                FROM run_executions e JOIN run_steps s ON s.execution_id = e.id AND s.workspace_id = e.workspace_id
               WHERE e.created_at > now() - interval '${WINDOW} minutes' AND s.started_at IS NOT NULL
               GROUP BY e.id, e.created_at) r
    ) s CROSS JOIN LATERAL (VALUES ('p50', s.p50), ('p95', s.p95), ('max', s.mx)) AS v(q, v) WHERE v IS NOT NULL
    UNION ALL
    SELECT 'runs_start_delay_top', rank::text, hash, p95 FROM (
      SELECT row_number() OVER (ORDER BY percentile_cont(0.95) WITHIN GROUP (ORDER BY d) DESC, workspace_id) AS rank,
             left(md5(workspace_id::text), 12) AS hash, percentile_cont(0.95) WITHIN GROUP (ORDER BY d) AS p95
        FROM (SELECT e.workspace_id, extract(epoch FROM min(s.started_at) - e.created_at)::float8 AS d
                FROM run_executions e JOIN run_steps s ON s.execution_id = e.id AND s.workspace_id = e.workspace_id
               WHERE e.created_at > now() - interval '${WINDOW} minutes' AND s.started_at IS NOT NULL
               GROUP BY e.workspace_id, e.id, e.created_at) r
       GROUP BY workspace_id
    ) t WHERE rank <= ${TOP}
`;

/**
 * Issue 43 item 5: the snapshot adds how runs queue, across workspaces and without their ids: runs
 * waiting to start (QUEUED) per workspace as percentiles and the top ${TOP} by a hash of the workspace
 * id, and the delay from dispatch to the first step's start of runs created in the last ${WINDOW}
 * minutes, likewise.
 */
export class RunQueueMetrics1763780021100 implements MigrationInterface {
  name = 'RunQueueMetrics1763780021100';

  async up(q: QueryRunner): Promise<void> {
    await q.query(`
CREATE OR REPLACE FUNCTION weft_metrics_snapshot()
  RETURNS TABLE (family text, label_a text, label_b text, value double precision)
  LANGUAGE sql STABLE SECURITY DEFINER SET search_path = public
  AS $$${QUEUE_SNAPSHOT}  $$;
`);
  }

  async down(q: QueryRunner): Promise<void> {
    await q.query(`
CREATE OR REPLACE FUNCTION weft_metrics_snapshot()
  RETURNS TABLE (family text, label_a text, label_b text, value double precision)
  LANGUAGE sql STABLE SECURITY DEFINER SET search_path = public
  AS $$${BEFORE}
  $$;
`);
  }
}
