import type { EntityManager } from 'typeorm';
import { queryFirst, queryRows } from '../platform/db/query';
import type { Scope, ScopedRead } from '../platform/db/unit-of-work';
import { typeaheadParams, typeaheadSql } from './repository';
import type { GraphNeighborhoodResponse, GraphOverviewRecord, GraphStatsRecord } from './traversal-schemas';
import { AS_OF_SQL } from './versions-repository';

/*
 * The read-only analytical statements behind overview, stats, neighbourhood and family tree. All
 * raw SQL: recursive expansion (`weft_graph_expand`), aggregates built into JSON in Postgres, and
 * plpgsql functions, none of which the query builder can say. Each runs under the caller's RLS
 * scope. The SQL texts are exported so that the benchmark times the same statements through `pg`.
 */

type CompactNode = GraphNeighborhoodResponse['candidates'][number];

/** One statement always answers one row; its absence is a bug of ours, not a client's. */
function single<T>(row: T | undefined, what: string): T {
  if (row === undefined) throw new Error(`${what} returned no row`);
  return row;
}

/**
 * One statement: the bounded expansion (`weft_graph_expand`, limits applied per level inside the
 * database), the nodes' compact rows, and up to edge_limit + 1 live edges with both ends in the
 * set (the extra row only tells that the list was cut). $1 start ids, $2 depth, $3 node limit,
 * $4 edge limit. Exported so the benchmark can time the same SQL through `pg`.
 */
export const SUBGRAPH_SQL = `
WITH s AS MATERIALIZED (SELECT node_id, depth FROM weft_graph_expand($1::uuid[], $2::int, $3::int)),
ids AS (SELECT array_agg(node_id) AS a FROM s),
es AS (
  SELECT e.id, e.type, e.source_node_id, e.target_node_id FROM edges e
  WHERE NOT e.is_deleted AND e.source_node_id = ANY ((SELECT a FROM ids)::uuid[])
    AND e.target_node_id IN (SELECT node_id FROM s)
  LIMIT $4::int + 1)
SELECT
  (SELECT coalesce(json_agg(json_build_object('id', n.id, 'type', n.type, 'name', n.name,
      'importance_score', n.importance_score, 'reference_count', n.reference_count,
      'connection_id', n.connection_id, 'depth', s.depth) ORDER BY s.depth, n.importance_score DESC, n.id), '[]')
   FROM s JOIN nodes n ON n.id = s.node_id) AS nodes,
  (SELECT coalesce(json_agg(es), '[]') FROM es) AS edges`;

/**
 * SUBGRAPH_SQL as the graph stood at $5 (issue 31): the expansion over the edges of then
 * (`weft_graph_expand_as_of`), the nodes' states of then, and the edges between them that were
 * live then: the live edges among the set now plus every edge a version since has touched,
 * each rebuilt as of $5. Importance and reference counts are not versioned: they are today's.
 */
export const SUBGRAPH_AS_OF_SQL = `
WITH s AS MATERIALIZED (SELECT node_id, depth FROM weft_graph_expand_as_of($1::uuid[], $2, $3, ${AS_OF_SQL('$5')})),
ids AS (SELECT array_agg(node_id) AS a FROM s),
touched AS MATERIALIZED (
  SELECT v.entity_id AS id, (v.before->>'source_node_id')::uuid AS bs, (v.before->>'target_node_id')::uuid AS bt
  FROM graph_versions v WHERE v.entity_kind = 'edge' AND v.changed_at > ${AS_OF_SQL('$5')}),
cand AS (
  SELECT e.id FROM edges e
  WHERE NOT e.is_deleted AND e.source_node_id = ANY ((SELECT a FROM ids)::uuid[])
    AND e.target_node_id IN (SELECT node_id FROM s)
  UNION
  SELECT e.id FROM edges e
  WHERE e.id = ANY ((SELECT array_agg(DISTINCT id) FROM touched)::uuid[])
    AND e.source_node_id = ANY ((SELECT a FROM ids)::uuid[]) AND e.target_node_id IN (SELECT node_id FROM s)
  UNION
  SELECT t.id FROM touched t
  WHERE t.bs = ANY ((SELECT a FROM ids)::uuid[]) OR t.bt = ANY ((SELECT a FROM ids)::uuid[])),
es AS (
  SELECT p.id, p.state->>'type' AS type, (p.state->>'source_node_id')::uuid AS source_node_id,
         (p.state->>'target_node_id')::uuid AS target_node_id
  FROM weft_edges_as_of((SELECT array_agg(id) FROM cand), ${AS_OF_SQL('$5')}) p
  WHERE NOT (p.state->>'is_deleted')::boolean
    AND (p.state->>'source_node_id')::uuid IN (SELECT node_id FROM s)
    AND (p.state->>'target_node_id')::uuid IN (SELECT node_id FROM s)
  ORDER BY p.id LIMIT $4 + 1),
ns AS (SELECT p.id, p.state FROM weft_nodes_as_of((SELECT a FROM ids), ${AS_OF_SQL('$5')}) p)
SELECT
  (SELECT coalesce(json_agg(json_build_object('id', ns.id, 'type', ns.state->>'type', 'name', ns.state->>'name',
      'importance_score', (ns.state->>'importance_score')::float8,
      'reference_count', (ns.state->>'reference_count')::int,
      'connection_id', ns.state->>'connection_id', 'depth', s.depth)
      ORDER BY s.depth, (ns.state->>'importance_score')::float8 DESC, ns.id), '[]')
   FROM s JOIN ns ON ns.id = s.node_id) AS nodes,
  (SELECT coalesce(json_agg(es), '[]') FROM es) AS edges`;

export interface SubgraphRow {
  nodes: GraphNeighborhoodResponse['nodes'];
  edges: GraphNeighborhoodResponse['edges'];
}

/**
 * SUBGRAPH_SQL as one scoped statement (createScopedRead), for the traversals of today from known
 * ids: no transaction around it, so one round trip instead of three.
 */
export async function readSubgraphNow(
  read: ScopedRead,
  scope: Scope,
  start: string[],
  depth: number,
  nodeLimit: number,
  edgeLimit: number,
): Promise<SubgraphRow> {
  // Scoped reads bind text: the ids go as an array literal (zod-checked uuids, nothing to quote).
  const [row] = await read<SubgraphRow>(scope, SUBGRAPH_SQL, [`{${start.join(',')}}`, depth, nodeLimit, edgeLimit]);
  return single(row, 'SUBGRAPH_SQL');
}

export const readSubgraph = async (
  m: EntityManager,
  start: string[],
  depth: number,
  nodeLimit: number,
  edgeLimit: number,
  asOf?: string,
): Promise<SubgraphRow> =>
  asOf === undefined
    ? single(await queryFirst<SubgraphRow>(m, SUBGRAPH_SQL, [start, depth, nodeLimit, edgeLimit]), 'SUBGRAPH_SQL')
    : single(
        await queryFirst<SubgraphRow>(m, SUBGRAPH_AS_OF_SQL, [start, depth, nodeLimit, edgeLimit, asOf]),
        'SUBGRAPH_AS_OF_SQL',
      );

const COMPACT_NODE = `n.id, n.type, n.name, n.importance_score, n.reference_count, n.connection_id`;

/** The best name matches as compact nodes, best first (the neighbourhood's `q`). */
export async function matchCompactNodes(m: EntityManager, q: string, limit: number): Promise<CompactNode[]> {
  const rows = await queryRows<CompactNode & { match_rank: number }>(
    m,
    typeaheadSql(COMPACT_NODE),
    typeaheadParams(q, null, limit),
  );
  return rows.map(({ id, type, name, importance_score, reference_count, connection_id }) => ({
    id,
    type,
    name,
    importance_score,
    reference_count,
    connection_id,
  }));
}

export interface OverviewRow {
  clusters: GraphOverviewRecord['clusters'];
  edges: GraphOverviewRecord['edges'];
  total_nodes: number;
  total_edges: number;
  folded: boolean;
}

export const readOverview = async (
  m: EntityManager,
  groupBy: 'type' | 'type_path' | 'community',
  maxSupernodes: number,
): Promise<OverviewRow> =>
  groupBy === 'community'
    ? single(await queryFirst<OverviewRow>(m, COMMUNITY_OVERVIEW_SQL, [maxSupernodes]), 'COMMUNITY_OVERVIEW_SQL')
    : single(await queryFirst<OverviewRow>(m, OVERVIEW_SQL, [groupBy === 'type_path', maxSupernodes]), 'OVERVIEW_SQL');

export type StatsRow = Omit<GraphStatsRecord, 'connectivity' | 'density'> & { isolated: number };

export const readStats = async (m: EntityManager, topHubs: number): Promise<StatsRow> =>
  single(await queryFirst<StatsRow>(m, STATS_SQL, [topHubs]), 'STATS_SQL');

/**
 * Weakly connected components among nodes with at least one live edge, and the largest one's
 * size (`weft_graph_components`, migrations/1763780007100-graph-components.ts). Reads every edge
 * several times.
 */
export async function computeComponents(m: EntityManager): Promise<{ components: number; largest: number }> {
  const row = single(
    await queryFirst<{ components: string; largest: string }>(
      m,
      `SELECT components, largest FROM weft_graph_components()`,
    ),
    'weft_graph_components',
  );
  // bigint arrives as a string.
  return { components: Number(row.components), largest: Number(row.largest) };
}

/**
 * Clusters: one per type, or per type and first '/'-segment of the name when the name has one.
 * The biggest max_supernodes - 1 clusters are kept and the rest folded into "_other" when there
 * are more than max_supernodes. Edges between clusters are counted over live edges.
 * $1 group by path (boolean), $2 max_supernodes.
 */
export const OVERVIEW_SQL = `
WITH nc AS MATERIALIZED (
  SELECT n.id, n.type,
    CASE WHEN $1 AND strpos(n.name, '/') > 1 THEN split_part(n.name, '/', 1) END AS path
  FROM nodes n WHERE NOT n.is_deleted),
counts AS (SELECT type, path, count(*) AS c FROM nc GROUP BY type, path),
ranked AS (
  SELECT type, path, c, type || coalesce('/' || path, '') AS k,
    row_number() OVER (ORDER BY c DESC, type, path) AS rn, count(*) OVER () AS total FROM counts),
kept AS (
  SELECT type, path, c, CASE WHEN total > $2 AND rn >= $2 THEN '_other' ELSE k END AS cluster FROM ranked),
cluster_of AS (
  SELECT nc.id, kept.cluster FROM nc JOIN kept ON kept.type = nc.type AND kept.path IS NOT DISTINCT FROM nc.path),
clusters AS (
  SELECT cluster AS id,
    CASE WHEN cluster = '_other' THEN NULL ELSE min(type) END AS type,
    CASE WHEN cluster = '_other' THEN NULL ELSE min(path) END AS path,
    sum(c)::int AS node_count
  FROM kept GROUP BY cluster),
links AS (
  SELECT s.cluster AS source, t.cluster AS target, count(*)::int AS edge_count
  FROM edges e JOIN cluster_of s ON s.id = e.source_node_id JOIN cluster_of t ON t.id = e.target_node_id
  WHERE NOT e.is_deleted GROUP BY 1, 2)
SELECT
  (SELECT coalesce(json_agg(clusters ORDER BY node_count DESC, id), '[]') FROM clusters) AS clusters,
  (SELECT coalesce(json_agg(links ORDER BY edge_count DESC, source, target), '[]') FROM links) AS edges,
  (SELECT count(*)::int FROM nc) AS total_nodes,
  (SELECT coalesce(sum(edge_count), 0)::int FROM links) AS total_edges,
  (SELECT count(*) > $2 FROM counts) AS folded`;

/**
 * Clusters by community (src/communities/): one per stored community, named by it, holding the
 * nodes that are MEMBER_OF it; nodes in none are "_none". Community nodes and MEMBER_OF edges are
 * the grouping itself, so they are neither clusters' members nor counted links. Folding into
 * "_other" as OVERVIEW_SQL does. $1 max_supernodes.
 */
export const COMMUNITY_OVERVIEW_SQL = `
WITH nc AS MATERIALIZED (
  SELECT n.id, coalesce((SELECT e.target_node_id::text FROM edges e
      WHERE e.workspace_id = n.workspace_id AND e.source_node_id = n.id AND e.type = 'MEMBER_OF' AND NOT e.is_deleted
      ORDER BY e.target_node_id LIMIT 1), '_none') AS k
  FROM nodes n WHERE NOT n.is_deleted AND n.type <> 'community'),
counts AS (SELECT k, count(*) AS c FROM nc GROUP BY k),
ranked AS (SELECT k, c, row_number() OVER (ORDER BY c DESC, k) AS rn, count(*) OVER () AS total FROM counts),
kept AS (SELECT k, c, CASE WHEN total > $1 AND rn >= $1 THEN '_other' ELSE k END AS cluster FROM ranked),
cluster_of AS (SELECT nc.id, kept.cluster FROM nc JOIN kept ON kept.k = nc.k),
clusters AS (
  SELECT cluster AS id,
    CASE WHEN cluster IN ('_other', '_none') THEN NULL ELSE 'community' END AS type,
    NULL::text AS path,
    CASE WHEN cluster IN ('_other', '_none') THEN NULL
         ELSE (SELECT c.name FROM nodes c WHERE c.id = cluster::uuid) END AS name,
    sum(c)::int AS node_count
  FROM kept GROUP BY cluster),
links AS (
  SELECT s.cluster AS source, t.cluster AS target, count(*)::int AS edge_count
  FROM edges e JOIN cluster_of s ON s.id = e.source_node_id JOIN cluster_of t ON t.id = e.target_node_id
  WHERE NOT e.is_deleted AND e.type <> 'MEMBER_OF' GROUP BY 1, 2)
SELECT
  (SELECT coalesce(json_agg(clusters ORDER BY node_count DESC, id), '[]') FROM clusters) AS clusters,
  (SELECT coalesce(json_agg(links ORDER BY edge_count DESC, source, target), '[]') FROM links) AS edges,
  (SELECT count(*)::int FROM nc) AS total_nodes,
  (SELECT coalesce(sum(edge_count), 0)::int FROM links) AS total_edges,
  (SELECT count(*) > $1 FROM counts) AS folded`;

/**
 * Everything but connectivity, from the node rows and their degree counters, except the edge
 * type distribution, which reads the edge type index. Live rows only. $1 top_hubs_limit.
 * A counter below 0 (only a bug or a hand edit can make one) counts as 0: a negative degree
 * would fall outside every bucket and overflow the bucket bounds.
 */
export const STATS_SQL = `
WITH live AS MATERIALIZED (
  SELECT id, type, name, connection_id, in_degree, out_degree, in_degree + out_degree AS degree FROM (
    SELECT n.id, n.type, n.name, n.connection_id,
      GREATEST(n.in_degree, 0) AS in_degree, GREATEST(n.out_degree, 0) AS out_degree
    FROM nodes n WHERE NOT n.is_deleted) c),
by_type AS (SELECT type, count(*)::int AS count FROM live GROUP BY type),
edge_types AS (SELECT e.type, count(*)::int AS count FROM edges e WHERE NOT e.is_deleted GROUP BY e.type),
by_connection AS (
  SELECT coalesce(connection_id::text, '_manual') AS connection_id,
    count(*)::int AS nodes, sum(out_degree)::int AS edges
  FROM live GROUP BY 1),
hubs AS (
  SELECT n.id, n.type, n.name, GREATEST(n.in_degree, 0) + GREATEST(n.out_degree, 0) AS degree,
    GREATEST(n.in_degree, 0) AS in_degree, GREATEST(n.out_degree, 0) AS out_degree
  -- Written as the index nodes_workspace_degree_idx is, so the top hubs come from it (incremental sort on id).
  FROM nodes n WHERE NOT n.is_deleted ORDER BY (n.out_degree + n.in_degree) DESC, n.id LIMIT $1),
buckets AS (
  -- b = bit length of the degree (floor(log2) + 1), in integer arithmetic: two-argument log() is
  -- numeric and took 0.85 s over 100k nodes.
  SELECT CASE WHEN degree = 0 THEN 0 ELSE length(ltrim(degree::bit(32)::text, '0')) END AS b, count(*)::int AS nodes
  FROM live GROUP BY 1)
SELECT
  json_build_object(
    'nodes', (SELECT count(*) FROM live),
    'edges', (SELECT coalesce(sum(out_degree), 0) FROM live),
    'node_types', (SELECT count(*) FROM by_type),
    'edge_types', (SELECT count(*) FROM edge_types)) AS totals,
  (SELECT coalesce(json_agg(by_type ORDER BY count DESC, type), '[]') FROM by_type) AS nodes_by_type,
  (SELECT coalesce(json_agg(edge_types ORDER BY count DESC, type), '[]') FROM edge_types) AS edges_by_type,
  (SELECT coalesce(json_agg(by_connection ORDER BY (connection_id = '_manual') DESC, nodes DESC, connection_id), '[]')
    FROM by_connection) AS by_connection,
  (SELECT coalesce(json_agg(hubs ORDER BY degree DESC, id), '[]') FROM hubs) AS top_hubs,
  (SELECT coalesce(json_agg(json_build_object(
      'min_degree', CASE WHEN b = 0 THEN 0 ELSE (2 ^ (b - 1))::int END,
      'max_degree', CASE WHEN b = 0 THEN 0 ELSE (2 ^ b)::int - 1 END,
      'nodes', nodes) ORDER BY b), '[]') FROM buckets) AS degree_distribution,
  (SELECT count(*)::int FROM live WHERE degree = 0) AS isolated`;
