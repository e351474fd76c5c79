import type { MigrationInterface, QueryRunner } from 'typeorm';
import { QUEUE_SNAPSHOT } from './1763780021100-run-queue-metrics';

/** The start-delay window in minutes, as the workspace figures'. */
const WINDOW = 15;

/**
 * Issue 43 items 2 and 5: a run's `flow.priority` (1 first to 5, 3 for every run before it), and the
 * metrics snapshot adds how runs queue by priority: runs waiting to start (QUEUED) and the delay from
 * dispatch to the first step's start of runs created in the last ${WINDOW} minutes (p50, p95, max).
 */
export class RunPriority1763780021200 implements MigrationInterface {
  name = 'RunPriority1763780021200';

  async up(q: QueryRunner): Promise<void> {
    await q.query(`
ALTER TABLE run_executions ADD COLUMN priority smallint NOT NULL DEFAULT 3
  CONSTRAINT run_executions_priority_range CHECK (priority BETWEEN 1 AND 5);

CREATE OR REPLACE FUNCTION weft_metrics_snapshot()
  RETURNS TABLE (family text, label_a text, label_b text, value double precision)
  LANGUAGE sql STABLE SECURITY DEFINER SET search_path = public
  AS $$${QUEUE_SNAPSHOT}
    UNION ALL
    SELECT 'runs_queued_priority', priority::text, '', count(*)::float8
      FROM run_executions WHERE status = 'QUEUED' GROUP BY priority
    UNION ALL
    SELECT 'runs_start_delay_priority', priority::text, q, v FROM (
      SELECT priority, percentile_cont(0.5) WITHIN GROUP (ORDER BY d) AS p50,
             percentile_cont(0.95) WITHIN GROUP (ORDER BY d) AS p95, max(d) AS mx
        FROM (SELECT e.priority, extract(epoch FROM min(s.started_at) - e.created_at)::float8 AS d
                FROM run_executions e JOIN run_steps s ON s.execution_id = e.id AND s.workspace_id = e.workspace_id
               WHERE e.created_at > now() - interval '${WINDOW} minutes' AND s.started_at IS NOT NULL
               GROUP BY e.id, e.priority, e.created_at) r
       GROUP BY priority
    ) s CROSS JOIN LATERAL (VALUES ('p50', s.p50), ('p95', s.p95), ('max', s.mx)) AS v(q, v) WHERE v IS NOT NULL
  $$;
`);
  }

  async down(q: QueryRunner): Promise<void> {
    await q.query(`
CREATE OR REPLACE FUNCTION weft_metrics_snapshot()
  RETURNS TABLE (family text, label_a text, label_b text, value double precision)
  LANGUAGE sql STABLE SECURITY DEFINER SET search_path = public
  AS $$${QUEUE_SNAPSHOT}  $$;

ALTER TABLE run_executions DROP COLUMN priority;
`);
  }
}
