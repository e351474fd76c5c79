import type { MigrationInterface, QueryRunner } from 'typeorm';
import { grantToAppRole } from './1763780008400-credit-settlement';

/**
 * The figures `GET /metrics` reports across every workspace, in one definer function that answers
 * aggregates only: no workspace id, name or row leaves it, and its labels are the tables' own bounded
 * vocabularies (a run's status and agent, a ledger kind, a delivery's outcome). The app role calls it
 * at scrape time (src/metrics/snapshot.ts caches the answer and bounds the statement's time).
 */
export class MetricsSnapshot1763780012000 implements MigrationInterface {
  name = 'MetricsSnapshot1763780012000';

  async up(q: QueryRunner): Promise<void> {
    await q.query(`
CREATE FUNCTION weft_metrics_snapshot()
  RETURNS TABLE (family text, label_a text, label_b text, value double precision)
  LANGUAGE sql STABLE SECURITY DEFINER SET search_path = public
  AS $$
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
      FROM credit_ledger WHERE amount > 0 AND linked_event_id IS NOT NULL GROUP BY kind
  $$;
REVOKE ALL ON FUNCTION weft_metrics_snapshot() FROM PUBLIC;
`);
    await grantToAppRole(q, 'weft_metrics_snapshot()');
  }

  async down(q: QueryRunner): Promise<void> {
    await q.query(`DROP FUNCTION IF EXISTS weft_metrics_snapshot();`);
  }
}
