import type { MigrationInterface, QueryRunner } from 'typeorm';

/**
 * Weakly connected components of the live graph among nodes with at least one live edge
 * (isolated nodes come from the degree counters). Postgres 15 has no min(uuid), so labels are
 * 64-bit hashes of node ids (uuid_hash_extended; a collision among 1M ids has odds ~1e-8).
 * Min-label propagation with pointer jumping over a temp table. It reads every edge a few
 * times: graph_stats runs it only below a size bound (src/rules/limits.ts), see the README, "Benchmarks".
 */
export const graphComponentsSql = `
CREATE OR REPLACE FUNCTION weft_graph_components(OUT components bigint, OUT largest bigint)
LANGUAGE plpgsql VOLATILE AS $fn$
DECLARE
  moved bigint;
BEGIN
  DROP TABLE IF EXISTS pg_temp.weft_cc;
  CREATE TEMP TABLE weft_cc ON COMMIT DROP AS
    SELECT x.id, uuid_hash_extended(x.id, 0) AS h, min(x.l) AS l FROM (
      SELECT e.source_node_id AS id,
        least(uuid_hash_extended(e.source_node_id, 0), uuid_hash_extended(e.target_node_id, 0)) AS l
        FROM edges e WHERE NOT e.is_deleted
      UNION ALL
      SELECT e.target_node_id, least(uuid_hash_extended(e.source_node_id, 0), uuid_hash_extended(e.target_node_id, 0))
        FROM edges e WHERE NOT e.is_deleted
    ) x GROUP BY x.id;
  CREATE INDEX ON weft_cc (h);
  CREATE UNIQUE INDEX ON weft_cc (id);
  ANALYZE weft_cc;
  LOOP
    -- Pointer jumping: adopt the label of the node one's label names, until nothing moves.
    LOOP
      UPDATE weft_cc c SET l = p.l FROM weft_cc p WHERE p.h = c.l AND p.l < c.l;
      EXIT WHEN NOT FOUND;
    END LOOP;
    -- Propagation across every edge whose ends still disagree.
    WITH better AS (
      SELECT x.id, min(x.l) AS l FROM (
        SELECT e.target_node_id AS id, a.l FROM edges e JOIN weft_cc a ON a.id = e.source_node_id
          JOIN weft_cc b ON b.id = e.target_node_id WHERE NOT e.is_deleted AND a.l < b.l
        UNION ALL
        SELECT e.source_node_id, b.l FROM edges e JOIN weft_cc a ON a.id = e.source_node_id
          JOIN weft_cc b ON b.id = e.target_node_id WHERE NOT e.is_deleted AND b.l < a.l
      ) x GROUP BY x.id)
    UPDATE weft_cc c SET l = better.l FROM better WHERE c.id = better.id AND better.l < c.l;
    GET DIAGNOSTICS moved = ROW_COUNT;
    EXIT WHEN moved = 0;
  END LOOP;
  SELECT count(*), coalesce(max(size), 0) INTO components, largest
    FROM (SELECT l, count(*) AS size FROM weft_cc GROUP BY l) c;
  DROP TABLE IF EXISTS pg_temp.weft_cc;
END
$fn$;`;

export class GraphComponents1763780007100 implements MigrationInterface {
  name = 'GraphComponents1763780007100';

  async up(q: QueryRunner): Promise<void> {
    await q.query(graphComponentsSql);
  }

  async down(q: QueryRunner): Promise<void> {
    await q.query(`DROP FUNCTION IF EXISTS weft_graph_components()`);
  }
}
