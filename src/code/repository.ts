import type { EntityManager } from 'typeorm';
import type { NodeRow } from '../graph/repository';
import { NODE_COLUMNS } from '../graph/repository';
import type { ImportanceSettings } from '../ontology-config/schemas';
import { affectedRows, queryFirst, queryRows } from '../platform/db/query';
import type { SymbolRef } from './schemas';

/*
 * The code graph's SQL, in the caller's unit of work (RLS scopes every statement to the
 * workspace). Raw SQL throughout: batches are written with unnest() in one statement each, and
 * symbol-context reads its lists in one statement.
 */

export interface SymbolValues {
  key: string;
  type: string;
  name: string;
  properties: Record<string, unknown>;
  baseSalience: number;
}

/** Keys of this repository already mapped to nodes, live or soft-deleted. */
export async function knownSymbols(m: EntityManager, repo: string, keys: readonly string[]) {
  const rows = await queryRows<{ key: string; node_id: string }>(
    m,
    `SELECT key, node_id FROM code_symbols WHERE repo = $1 AND key = ANY($2::text[])`,
    [repo, keys],
  );
  return new Map(rows.map((row) => [row.key, row.node_id]));
}

/** Live nodes of these keys (edge ends). */
export async function liveSymbolNodes(m: EntityManager, repo: string, keys: readonly string[]) {
  const rows = await queryRows<{ key: string; node_id: string }>(
    m,
    `SELECT s.key, s.node_id FROM code_symbols s JOIN nodes n ON n.id = s.node_id AND NOT n.is_deleted
     WHERE s.repo = $1 AND s.key = ANY($2::text[])`,
    [repo, keys],
  );
  return new Map(rows.map((row) => [row.key, row.node_id]));
}

/**
 * Updates existing nodes in place (same id), reviving soft-deleted ones; a node whose values did
 * not change is left alone. Returns the ids written and whether each needs a new embedding (its
 * name, signature or doc changed, or it was revived). The self-join reads the rows as they were.
 */
export async function updateSymbolNodes(
  m: EntityManager,
  rows: readonly (SymbolValues & { id: string })[],
): Promise<{ id: string; reembed: boolean }[]> {
  if (rows.length === 0) return [];
  return queryRows<{ id: string; reembed: boolean }>(
    m,
    `UPDATE nodes n SET type = v.type, name = v.name, properties = v.props, is_deleted = false, deleted_at = NULL,
       updated_at = now()
     FROM unnest($1::uuid[], $2::text[], $3::text[], $4::jsonb[]) AS v(id, type, name, props)
     JOIN nodes o ON o.id = v.id
     WHERE n.id = v.id AND (o.is_deleted OR o.type <> v.type OR o.name <> v.name OR o.properties <> v.props)
     RETURNING n.id, (o.is_deleted OR o.name <> v.name
       OR (o.properties->>'signature') IS DISTINCT FROM (v.props->>'signature')
       OR (o.properties->>'doc') IS DISTINCT FROM (v.props->>'doc')) AS reembed`,
    [
      rows.map((row) => row.id),
      rows.map((row) => row.type),
      rows.map((row) => row.name),
      rows.map((row) => JSON.stringify(row.properties)),
    ],
  );
}

/** New nodes at age 0 (importance = base salience, clamped); returns each key's new id. */
export async function insertSymbolNodes(
  m: EntityManager,
  workspaceId: string,
  rows: readonly SymbolValues[],
  settings: ImportanceSettings,
): Promise<Map<string, string>> {
  if (rows.length === 0) return new Map();
  const inserted = await queryRows<{ id: string; key: string }>(
    m,
    `INSERT INTO nodes (workspace_id, type, name, properties, base_salience, importance_score)
     SELECT $1, v.type, v.name, v.props, v.salience, LEAST($7::float8, GREATEST($6::float8, v.salience))
     FROM unnest($2::text[], $3::text[], $4::jsonb[], $5::float8[]) AS v(type, name, props, salience)
     RETURNING id, properties->>'key' AS key`,
    [
      workspaceId,
      rows.map((row) => row.type),
      rows.map((row) => row.name),
      rows.map((row) => JSON.stringify(row.properties)),
      rows.map((row) => row.baseSalience),
      settings.min_importance,
      settings.max_importance,
    ],
  );
  return new Map(inserted.map((row) => [row.key, row.id]));
}

/** Maps new keys to their nodes and stamps every key of the batch as seen by this pass. */
export async function recordSymbols(
  m: EntityManager,
  input: { workspaceId: string; repo: string; runId: string; keys: readonly string[]; nodeIds: readonly string[] },
): Promise<void> {
  if (input.keys.length === 0) return;
  await affectedRows(
    m,
    `INSERT INTO code_symbols (workspace_id, repo, key, node_id, seen_run)
     SELECT $1, $2, v.key, v.node_id, $3 FROM unnest($4::text[], $5::uuid[]) AS v(key, node_id)
     ON CONFLICT (workspace_id, repo, key) DO UPDATE SET seen_run = EXCLUDED.seen_run, updated_at = now()`,
    [input.workspaceId, input.repo, input.runId, input.keys, input.nodeIds],
  );
}

export interface EdgeValues {
  type: string;
  sourceNodeId: string;
  targetNodeId: string;
  properties: Record<string, unknown>;
}

/**
 * Writes each edge once: a live edge with the same ends and type is updated (its properties carry
 * the pass that saw it), a missing one is inserted. Returns how many were written.
 */
export async function upsertCodeEdges(
  m: EntityManager,
  workspaceId: string,
  edges: readonly EdgeValues[],
): Promise<number> {
  if (edges.length === 0) return 0;
  const params = [
    workspaceId,
    edges.map((edge) => edge.type),
    edges.map((edge) => edge.sourceNodeId),
    edges.map((edge) => edge.targetNodeId),
    edges.map((edge) => JSON.stringify(edge.properties)),
  ];
  const row = await queryFirst<{ updated: number; inserted: number }>(
    m,
    `WITH v AS (SELECT * FROM unnest($2::text[], $3::uuid[], $4::uuid[], $5::jsonb[]) AS v(type, s, t, props)),
     upd AS (
       UPDATE edges e SET properties = v.props FROM v
       WHERE e.source_node_id = v.s AND e.target_node_id = v.t AND e.type = v.type AND NOT e.is_deleted
       RETURNING e.source_node_id, e.target_node_id, e.type),
     ins AS (
       INSERT INTO edges (workspace_id, type, source_node_id, target_node_id, properties)
       SELECT $1, v.type, v.s, v.t, v.props FROM v
       WHERE NOT EXISTS (SELECT 1 FROM upd WHERE upd.source_node_id = v.s AND upd.target_node_id = v.t
                                               AND upd.type = v.type)
       RETURNING id)
     SELECT (SELECT count(*) FROM upd)::int AS updated, (SELECT count(*) FROM ins)::int AS inserted`,
    params,
  );
  return (row?.updated ?? 0) + (row?.inserted ?? 0);
}

/** What a pass covered: the path prefixes it read (undefined: all) and the files it skipped. */
export interface PassCoverage {
  include?: readonly string[];
  skipped: readonly string[];
}

/**
 * Whether the code_symbols row `s` of node `n` lies inside the pass's coverage ($3 include
 * prefixes, null for all; $4 skipped paths). Keys are `path` or `path#name`; a commit (keyed by
 * sha) is covered only by a pass over the whole repository.
 */
const COVERED = `(CASE WHEN $3::text[] IS NULL THEN true
        WHEN n.type = 'code.commit' THEN false
        ELSE EXISTS (SELECT 1 FROM unnest($3::text[]) AS p(prefix) WHERE starts_with(s.key, p.prefix)) END)
   AND NOT EXISTS (SELECT 1 FROM unnest($4::text[]) AS k(path)
                   WHERE n.type <> 'code.commit' AND (s.key = k.path OR starts_with(s.key, k.path || '#')))`;

const coverageParams = (coverage: PassCoverage) => [coverage.include ?? null, coverage.skipped];

/**
 * The end of a pass: soft-deletes the repository's nodes inside the pass's coverage that the pass
 * did not see; returns their ids. A partial pass (`--include`, skipped files) leaves the rest alone.
 */
export async function softDeleteUnseenSymbols(
  m: EntityManager,
  repo: string,
  runId: string,
  coverage: PassCoverage,
): Promise<string[]> {
  const rows = await queryRows<{ id: string }>(
    m,
    `UPDATE nodes n SET is_deleted = true, deleted_at = now(), updated_at = now()
     FROM code_symbols s WHERE s.node_id = n.id AND s.repo = $1 AND s.seen_run <> $2 AND NOT n.is_deleted
       AND ${COVERED}
     RETURNING n.id`,
    [repo, runId, ...coverageParams(coverage)],
  );
  return rows.map((row) => row.id);
}

/**
 * The end of a pass: soft-deletes the repository's edges that the indexer wrote (they carry
 * `code_repo`) from a source inside the pass's coverage, and that this pass did not write.
 */
export const softDeleteUnseenEdges = (m: EntityManager, repo: string, runId: string, coverage: PassCoverage) =>
  affectedRows(
    m,
    `UPDATE edges e SET is_deleted = true, deleted_at = now()
     FROM code_symbols s JOIN nodes n ON n.id = s.node_id
     WHERE NOT e.is_deleted AND e.properties ? 'code_repo' AND e.properties->>'code_repo' = $1
       AND e.properties->>'code_run' IS DISTINCT FROM $2
       AND s.node_id = e.source_node_id AND s.repo = $1 AND ${COVERED}`,
    [repo, runId, ...coverageParams(coverage)],
  );

/**
 * The indexer's own edges at deleted symbols. Edges it did not write (a finding's FINDING_OF, a
 * user's edge) belong to their writers and stay, so a symbol revived by a later pass keeps them.
 */
export const softDeleteIncidentCodeEdges = (m: EntityManager, nodeIds: readonly string[]) =>
  affectedRows(
    m,
    `UPDATE edges SET is_deleted = true, deleted_at = now()
     WHERE NOT is_deleted AND properties ? 'code_repo'
       AND (source_node_id = ANY($1::uuid[]) OR target_node_id = ANY($1::uuid[]))`,
    [nodeIds],
  );

// ---- symbol-context ----

/** A resolved symbol: its node, its key and its vector (pgvector text, null until embedded). */
export type SymbolRow = NodeRow & { key: string | null; vector: string | null };
const SYMBOL_COLUMNS = `${NODE_COLUMNS}, n.properties->>'key' AS key, n.embedding::text AS vector`;

/** A live node by id. */
export const liveNodeById = (m: EntityManager, nodeId: string) =>
  queryFirst<SymbolRow>(m, `SELECT ${SYMBOL_COLUMNS} FROM nodes n WHERE n.id = $1 AND NOT n.is_deleted`, [nodeId]);

/** Live nodes of `type` named `name`, or whose code key is `name` (at most `limit`). */
export const nodesByNameAndType = (m: EntityManager, name: string, type: string, limit: number) =>
  queryRows<SymbolRow>(
    m,
    `SELECT ${SYMBOL_COLUMNS} FROM nodes n
     WHERE NOT n.is_deleted AND n.type = $2
       AND (n.name = $1 OR n.id IN (SELECT node_id FROM code_symbols WHERE key = $1))
     ORDER BY n.id LIMIT $3`,
    [name, type, limit],
  );

const REF = (alias: string) =>
  `json_build_object('id', ${alias}.id, 'type', ${alias}.type, 'name', ${alias}.name,
     'key', ${alias}.properties->>'key', 'path', ${alias}.properties->>'path',
     'line', (${alias}.properties->>'line')::int)`;
const refList = (from: string, order = 'r.name, r.id', limit = '$2') =>
  `(SELECT coalesce(json_agg(x.ref), '[]'::json) FROM (SELECT ${REF('r')} AS ref ${from} ORDER BY ${order}
     LIMIT ${limit}) x)`;
/**
 * A paged list (issue 30): keyset on (name, id) after the cursor's pair ($n name, $n+1 id, both null
 * on the first page), one row more than the cap so that the caller knows whether a next page exists.
 */
const pagedList = (from: string, n: number) =>
  refList(
    `${from} AND ($${n}::text IS NULL OR (r.name, r.id) > ($${n}::text, $${n + 1}::uuid))`,
    'r.name, r.id',
    '$2 + 1',
  );
const live = (alias: string) => `NOT ${alias}.is_deleted`;
/** How deep functions nest before the file (`outer.inner.leaf`: 3); deeper ones have no recent commits. */
const CONTAINS_DEPTH = 8;

/**
 * Everything around a symbol in one statement: its containing class and that class's other
 * methods, its tests, callers and callees, its nearest code nodes by embedding (HNSW, cosine) and
 * the commits that touched it or its file, newest first. A test block's callees are what it TESTS.
 * $1 the node, $2 each list's cap, $3 its
 * embedding (pgvector text) or null: a parameter, not a column of a CTE, so the HNSW index can
 * order the neighbours. $4–$9: the (name, id) after which the tests, callers and callees pages
 * start (nulls for a first page); those three lists return up to $2 + 1 rows (the extra one says
 * that a next page exists).
 */
export const SYMBOL_CONTEXT_SQL = `
WITH RECURSIVE s AS (SELECT n.id, n.type FROM nodes n WHERE n.id = $1 AND NOT n.is_deleted),
parents AS (
  SELECT p.id, p.type FROM edges e JOIN nodes p ON p.id = e.source_node_id AND ${live('p')}
  WHERE e.target_node_id = $1 AND e.type = 'CONTAINS' AND ${live('e')}),
cls AS (SELECT id FROM parents WHERE type IN ('code.class', 'code.interface') ORDER BY id LIMIT 1),
-- What contains the symbol, up to its file: a class, or the functions a nested one lies in (issue 45).
ancestors(id, type, depth) AS (
  SELECT id, type, 1 FROM parents
  UNION SELECT p.id, p.type, a.depth + 1 FROM ancestors a
    JOIN edges e ON e.target_node_id = a.id AND e.type = 'CONTAINS' AND ${live('e')}
    JOIN nodes p ON p.id = e.source_node_id AND ${live('p')}
    WHERE a.type <> 'code.file' AND a.depth < ${CONTAINS_DEPTH}),
files AS (
  SELECT id FROM s WHERE type = 'code.file'
  UNION SELECT id FROM ancestors WHERE type = 'code.file')
SELECT
  (SELECT ${REF('r')} FROM cls JOIN nodes r ON r.id = cls.id) AS containing_class,
  ${refList(`FROM cls JOIN edges e ON e.source_node_id = cls.id AND e.type = 'CONTAINS' AND ${live('e')}
    JOIN nodes r ON r.id = e.target_node_id AND r.type = 'code.method' AND r.id <> $1 AND ${live('r')}`)}
    AS sibling_methods,
  ${pagedList(
    `FROM edges e JOIN nodes r ON r.id = e.source_node_id AND ${live('r')}
    WHERE e.target_node_id = $1 AND e.type = 'TESTS' AND ${live('e')}`,
    4,
  )} AS tests,
  ${pagedList(
    `FROM edges e JOIN nodes r ON r.id = e.source_node_id AND ${live('r')}
    WHERE e.target_node_id = $1 AND e.type = 'CALLS' AND ${live('e')}`,
    6,
  )} AS callers,
  ${pagedList(
    `FROM edges e JOIN nodes r ON r.id = e.target_node_id AND ${live('r')}
    WHERE e.source_node_id = $1 AND e.type IN ('CALLS', 'TESTS') AND ${live('e')}`,
    8,
  )} AS callees,
  (SELECT coalesce(json_agg(x.ref ORDER BY x.distance, x.id), '[]'::json) FROM (
     SELECT r.id, r.embedding <=> $3::vector AS distance,
            (${REF('r')})::jsonb || jsonb_build_object('similarity', 1 - (r.embedding <=> $3::vector)) AS ref
     FROM nodes r
     WHERE $3::vector IS NOT NULL AND r.embedding IS NOT NULL AND ${live('r')} AND r.id <> $1
       AND r.type LIKE 'code.%' AND r.type <> 'code.commit'
     ORDER BY r.embedding <=> $3::vector LIMIT $2) x) AS semantic,
  (SELECT coalesce(json_agg(y.commit ORDER BY y.committed_at DESC, y.sha), '[]'::json) FROM (SELECT * FROM (
     SELECT DISTINCT ON (c.id) c.properties->>'sha' AS sha, c.properties->>'committed_at' AS committed_at,
            json_build_object('sha', c.properties->>'sha', 'message', c.properties->>'message',
              'author', c.properties->>'author', 'committed_at', c.properties->>'committed_at',
              'action', e.properties->>'action') AS commit
     FROM (SELECT $1::uuid AS id UNION SELECT id FROM files) t
     JOIN edges e ON e.target_node_id = t.id AND e.type = 'TOUCHED' AND ${live('e')}
     JOIN nodes c ON c.id = e.source_node_id AND c.type = 'code.commit' AND ${live('c')}
     ORDER BY c.id, (e.target_node_id = $1) DESC
   ) x ORDER BY x.committed_at DESC, x.sha LIMIT $2) y) AS recent_commits`;

export interface SymbolContextRow {
  containing_class: SymbolRef | null;
  sibling_methods: SymbolRef[];
  tests: SymbolRef[];
  callers: SymbolRef[];
  callees: SymbolRef[];
  semantic: (SymbolRef & { similarity: number })[];
  recent_commits: { sha: string; message: string; author: string; committed_at: string; action: string }[];
}

/** Where each paged list starts: after the (name, id) of the previous page's last row. */
export interface ContextPageStarts {
  tests?: { name: string; id: string };
  callers?: { name: string; id: string };
  callees?: { name: string; id: string };
}

export const symbolContext = (
  m: EntityManager,
  symbol: { id: string; vector: string | null },
  limit: number,
  after: ContextPageStarts = {},
) =>
  queryFirst<SymbolContextRow>(m, SYMBOL_CONTEXT_SQL, [
    symbol.id,
    limit,
    symbol.vector,
    ...(['tests', 'callers', 'callees'] as const).flatMap((list) => [
      after[list]?.name ?? null,
      after[list]?.id ?? null,
    ]),
  ]);
