import type { DataSource } from 'typeorm';

export const BENCH_WORKSPACE_NAME = 'weft-bench-graph';

const NODE_TYPES = ['person', 'organization', 'project', 'document', 'concept', 'task', 'code.module', 'code.function'];
const EDGE_TYPES = ['KNOWS', 'WORKS_ON', 'MENTIONS', 'DEPENDS_ON', 'CONTAINS', 'CALLS'];

/**
 * Fills `workspaceId` with `nodes` nodes and `edges` edges through the owner connection, in SQL
 * (generate_series), so loading 1M edges takes seconds rather than 1M API calls. Degrees are
 * skewed: a source is picked with density ∝ x^-1/2 and a target ∝ x^-2/3 over the node index,
 * so the first nodes become hubs with tens of thousands of edges (a power-law-like tail).
 * Code nodes get path-like names ("src/mod7/file123") so type_path grouping has paths to group.
 */
export async function loadPowerLawGraph(
  owner: DataSource,
  workspaceId: string,
  nodes: number,
  edges: number,
): Promise<void> {
  await owner.transaction(async (m) => {
    await m.query(
      `CREATE TEMP TABLE bench_nodes ON COMMIT DROP AS
      SELECT g AS i, gen_random_uuid() AS id FROM generate_series(0, $1 - 1) g`,
      [nodes],
    );
    await m.query(`CREATE UNIQUE INDEX ON bench_nodes (i)`);
    await m.query(
      `INSERT INTO nodes (id, workspace_id, type, name, properties, base_salience, importance_score, reference_count,
       created_at, last_touch_at)
       SELECT b.id, $1, t.type,
         CASE WHEN t.type LIKE 'code.%' THEN 'src/mod' || (b.i % 40) || '/file' || b.i
              ELSE initcap(t.type) || ' ' || b.i || ' '
                   || (ARRAY['alpha','beta','gamma','delta','omega'])[1 + b.i % 5] END,
         jsonb_build_object('rank', b.i, 'group', b.i % 10),
         0.5, 0.5 * random(), (random() * 20)::int,
         now() - make_interval(days => (random() * 365)::int), now() - make_interval(days => (random() * 30)::int)
       FROM bench_nodes b CROSS JOIN LATERAL (SELECT ($2::text[])[1 + b.i % $3] AS type) t`,
      [workspaceId, NODE_TYPES, NODE_TYPES.length],
    );
    await m.query(
      `INSERT INTO edges (workspace_id, type, source_node_id, target_node_id)
       SELECT $1, ($2::text[])[1 + p.g % $3], s.id, t.id
       FROM (SELECT g, floor($4 * power(random(), 2))::int AS si, floor($4 * power(random(), 3))::int AS ti
             FROM generate_series(1, $5) g) p
       JOIN bench_nodes s ON s.i = p.si JOIN bench_nodes t ON t.i = p.ti
       WHERE p.si <> p.ti`,
      [workspaceId, EDGE_TYPES, EDGE_TYPES.length, nodes, edges],
    );
  });
  await owner.query(`VACUUM ANALYZE nodes`);
  await owner.query(`VACUUM ANALYZE edges`);
}
