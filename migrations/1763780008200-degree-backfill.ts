import type { MigrationInterface, QueryRunner } from 'typeorm';

/**
 * Recounts `nodes.out_degree` / `in_degree` from the live edges. The counters arrived
 * (1763780003100-graph.ts) with a default of 0 and triggers that only count changes from then
 * on, so a table that already had edges kept zeros, and a later delete of such an edge drove a
 * counter negative. Only rows whose counts differ are written (an UPDATE rewrites the row's
 * vector). The edges are locked against writers meanwhile, so no trigger delta slips between
 * the count and the update. The owner role bypasses row-level security: every workspace at once.
 */
export class DegreeBackfill1763780008200 implements MigrationInterface {
  name = 'DegreeBackfill1763780008200';

  async up(q: QueryRunner): Promise<void> {
    await q.query(`LOCK TABLE edges IN SHARE MODE`);
    await q.query(`
WITH counted AS (
  SELECT id, sum(o)::int AS o, sum(i)::int AS i FROM (
    SELECT source_node_id AS id, 1 AS o, 0 AS i FROM edges WHERE NOT is_deleted
    UNION ALL
    SELECT target_node_id, 0, 1 FROM edges WHERE NOT is_deleted) x
  GROUP BY id),
target AS (
  SELECT n.id, coalesce(c.o, 0) AS o, coalesce(c.i, 0) AS i
  FROM nodes n LEFT JOIN counted c ON c.id = n.id
  WHERE (n.out_degree, n.in_degree) IS DISTINCT FROM (coalesce(c.o, 0), coalesce(c.i, 0)))
UPDATE nodes n SET out_degree = target.o, in_degree = target.i FROM target WHERE n.id = target.id`);
  }

  async down(): Promise<void> {
    // Counts are data: there is nothing to undo.
  }
}
