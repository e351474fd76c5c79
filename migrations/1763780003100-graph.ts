import type { MigrationInterface, QueryRunner } from 'typeorm';

// Live edges arriving (new rows) count +1 at each end, live edges leaving (old rows) count -1.
// A trigger function can name only the transition tables its trigger declares, hence one
// function per event over the same statement.
const degreeDelta = (parts: string[]) => `
  WITH delta AS (
    SELECT id, sum(o)::int AS o, sum(i)::int AS i FROM (${parts.join(' UNION ALL ')}) x GROUP BY id)
  UPDATE nodes n SET out_degree = n.out_degree + delta.o, in_degree = n.in_degree + delta.i
    FROM delta WHERE n.id = delta.id AND (delta.o <> 0 OR delta.i <> 0);`;
const arriving = [
  `SELECT source_node_id AS id, 1 AS o, 0 AS i FROM new_edges WHERE NOT is_deleted`,
  `SELECT target_node_id, 0, 1 FROM new_edges WHERE NOT is_deleted`,
];
const leaving = [
  `SELECT source_node_id AS id, -1 AS o, 0 AS i FROM old_edges WHERE NOT is_deleted`,
  `SELECT target_node_id, 0, -1 FROM old_edges WHERE NOT is_deleted`,
];
const triggerFunction = (name: string, body: string) =>
  `CREATE FUNCTION ${name}() RETURNS trigger LANGUAGE plpgsql AS $fn$ BEGIN ${body} RETURN NULL; END $fn$;`;
const degreeTriggersSql = `
${triggerFunction('weft_edges_degree_on_insert', degreeDelta(arriving))}
${triggerFunction('weft_edges_degree_on_update', degreeDelta([...arriving, ...leaving]))}
${triggerFunction('weft_edges_degree_on_delete', degreeDelta(leaving))}
CREATE TRIGGER edges_degree_insert AFTER INSERT ON edges REFERENCING NEW TABLE AS new_edges
  FOR EACH STATEMENT EXECUTE FUNCTION weft_edges_degree_on_insert();
CREATE TRIGGER edges_degree_update AFTER UPDATE ON edges REFERENCING OLD TABLE AS old_edges NEW TABLE AS new_edges
  FOR EACH STATEMENT EXECUTE FUNCTION weft_edges_degree_on_update();
CREATE TRIGGER edges_degree_delete AFTER DELETE ON edges REFERENCING OLD TABLE AS old_edges
  FOR EACH STATEMENT EXECUTE FUNCTION weft_edges_degree_on_delete();`;

/**
 * Indexes and database functions for the graph feature. The tables themselves come from the
 * foundation migration; this adds what the read paths need:
 * - trigram search on node names (typeahead, the neighborhood's `q`);
 * - ordered listing and the connection filter;
 * - edge indexes that carry the far end, id and type, so traversals are index-only scans;
 * - `weft_graph_expand`, the bounded breadth-first expansion behind neighborhood and family_tree.
 * Functions are SECURITY INVOKER (the default): row-level security applies inside them.
 */
export class Graph1763780003100 implements MigrationInterface {
  name = 'Graph1763780003100';

  async up(q: QueryRunner): Promise<void> {
    await q.query(`
CREATE INDEX nodes_name_trgm_idx ON nodes USING gin (name gin_trgm_ops) WHERE NOT is_deleted;
CREATE INDEX nodes_workspace_lower_name_idx ON nodes (workspace_id, lower(name)) WHERE NOT is_deleted;
CREATE INDEX nodes_workspace_created_idx ON nodes (workspace_id, created_at, id) WHERE NOT is_deleted;
CREATE INDEX nodes_workspace_connection_idx ON nodes (workspace_id, connection_id, created_at) WHERE NOT is_deleted;

DROP INDEX edges_source_idx;
DROP INDEX edges_target_idx;
CREATE INDEX edges_source_idx ON edges (workspace_id, source_node_id) INCLUDE (target_node_id, id, type)
  WHERE NOT is_deleted;
CREATE INDEX edges_target_idx ON edges (workspace_id, target_node_id) INCLUDE (source_node_id, id, type)
  WHERE NOT is_deleted;
CREATE INDEX edges_workspace_created_idx ON edges (workspace_id, created_at, id) WHERE NOT is_deleted;

-- Degree counters, kept by statement-level triggers so that every writer of edges (API, prompt
-- pipeline, merges, bulk deletes) keeps them right: graph_stats reads hubs, the degree
-- distribution and the live edge total from 100k node rows instead of aggregating 1M edges.
ALTER TABLE nodes ADD COLUMN out_degree integer NOT NULL DEFAULT 0, ADD COLUMN in_degree integer NOT NULL DEFAULT 0;
CREATE INDEX nodes_workspace_degree_idx ON nodes (workspace_id, (out_degree + in_degree) DESC) WHERE NOT is_deleted;

${degreeTriggersSql}

-- Breadth-first, both directions, from p_start, at most p_hops levels and p_node_limit nodes in
-- all (the start included). Each level reads the frontier's edges through the covering indexes
-- and stops as soon as it has enough new nodes, so a hub's fan-out is never read in full.
CREATE FUNCTION weft_graph_expand(p_start uuid[], p_hops int, p_node_limit int)
RETURNS TABLE (node_id uuid, depth int)
LANGUAGE plpgsql STABLE AS $fn$
DECLARE
  visited uuid[];
  frontier uuid[];
  found uuid[];
  room int;
  fetched int;
  want int;
  d int := 0;
BEGIN
  SELECT coalesce(array_agg(DISTINCT n.id), '{}') INTO visited
    FROM nodes n WHERE n.id = ANY(p_start) AND NOT n.is_deleted;
  visited := visited[1:p_node_limit];
  frontier := visited;
  RETURN QUERY SELECT v, 0 FROM unnest(visited) v;
  WHILE d < p_hops AND cardinality(frontier) > 0 AND cardinality(visited) < p_node_limit LOOP
    d := d + 1;
    room := p_node_limit - cardinality(visited);
    -- Duplicates (several frontier nodes sharing a neighbour) are dropped after the LIMIT, so ask
    -- for more than the room and widen only when the first batch was both full and too small.
    want := room * 2;
    LOOP
      SELECT coalesce(array_agg(DISTINCT c.nbr), '{}'), count(*) INTO found, fetched FROM (
        SELECT x.nbr FROM (
          SELECT e.target_node_id AS nbr FROM edges e
           WHERE e.source_node_id = ANY(frontier) AND NOT e.is_deleted
          UNION ALL
          SELECT e.source_node_id FROM edges e
           WHERE e.target_node_id = ANY(frontier) AND NOT e.is_deleted
        ) x
        WHERE x.nbr NOT IN (SELECT unnest(visited))
        LIMIT want
      ) c;
      EXIT WHEN fetched < want OR cardinality(found) >= room OR want >= 64 * room;
      want := want * 4;
    END LOOP;
    found := found[1:room];
    EXIT WHEN cardinality(found) = 0;
    RETURN QUERY SELECT f, d FROM unnest(found) f;
    visited := visited || found;
    frontier := found;
  END LOOP;
END
$fn$;

`);
  }

  async down(q: QueryRunner): Promise<void> {
    await q.query(`
DROP TRIGGER IF EXISTS edges_degree_insert ON edges;
DROP TRIGGER IF EXISTS edges_degree_update ON edges;
DROP TRIGGER IF EXISTS edges_degree_delete ON edges;
DROP FUNCTION IF EXISTS weft_edges_degree_on_insert(), weft_edges_degree_on_update(), weft_edges_degree_on_delete();
DROP FUNCTION IF EXISTS weft_graph_expand(uuid[], int, int);
DROP INDEX IF EXISTS nodes_workspace_degree_idx, nodes_name_trgm_idx, nodes_workspace_lower_name_idx,
  nodes_workspace_created_idx, nodes_workspace_connection_idx, edges_workspace_created_idx,
  edges_source_idx, edges_target_idx;
ALTER TABLE nodes DROP COLUMN IF EXISTS out_degree, DROP COLUMN IF EXISTS in_degree;
CREATE INDEX edges_source_idx ON edges (workspace_id, source_node_id) WHERE NOT is_deleted;
CREATE INDEX edges_target_idx ON edges (workspace_id, target_node_id) WHERE NOT is_deleted;
`);
  }
}
