import type { EntityManager } from 'typeorm';
import { queryFirst, queryRows } from '../platform/db/query';
import type { Scope, ScopedRead } from '../platform/db/unit-of-work';

/*
 * The graph's versions (issue 31): written by the row triggers of
 * migrations/1763780013100-graph-versions.ts, read here. A past state is the current row with the
 * `before` of every later version laid over it (`weft_nodes_as_of`, `weft_edges_as_of`), so a read
 * as of a recent instant reads only the few versions since.
 */

/** An instant named to the millisecond: a change within that millisecond counts as before it. */
export const AS_OF_SQL = (param: string) => `(date_trunc('milliseconds', ${param}::timestamptz) + interval '999 us')`;

export type EntityState = Record<string, unknown>;

/** The node as it stood at `at` (deleted ones too, with is_deleted); undefined when it did not exist. */
export async function readNodeAsOf(
  read: ScopedRead,
  scope: Scope,
  nodeId: string,
  at: string,
): Promise<EntityState | undefined> {
  const [row] = await read<{ state: EntityState }>(
    scope,
    `SELECT p.state FROM weft_nodes_as_of(ARRAY[$1::uuid], ${AS_OF_SQL('$2')}) p`,
    [nodeId, at],
  );
  return row?.state;
}

export interface VersionRow {
  version_id: string;
  entity_kind: 'node' | 'edge';
  entity_id: string;
  operation: 'create' | 'update' | 'delete' | 'restore' | 'purge';
  label: string | null;
  changed_at: string;
  user_id: string | null;
  credential_kind: string | null;
  credential_id: string | null;
  run_id: string | null;
  prompt_id: string | null;
  capability: string | null;
  capability_call: string | null;
  before: EntityState | null;
  after: EntityState | null;
}

const VERSION_COLUMNS = `v.id::text AS version_id, v.entity_kind, v.entity_id, v.operation, v.label, v.changed_at,
  v.user_id, v.credential_kind, v.credential_id, v.run_id, v.prompt_id, v.capability, v.capability_call,
  v.before, v.after`;

/** One entity's versions, newest first, below the cursor's version id. One statement. */
export const readEntityHistory = (
  read: ScopedRead,
  scope: Scope,
  page: { kind: 'node' | 'edge'; id: string; beforeVersion: string | null; limit: number },
) =>
  read<VersionRow>(
    scope,
    `SELECT ${VERSION_COLUMNS} FROM graph_versions v
     WHERE v.entity_id = $1::uuid AND v.entity_kind = $2::text AND ($3::bigint IS NULL OR v.id < $3::bigint)
     ORDER BY v.id DESC LIMIT $4::int`,
    [page.id, page.kind, page.beforeVersion, page.limit],
  );

/** Whether a node row with this id exists for the workspace, live or not. */
export async function nodeRowExists(read: ScopedRead, scope: Scope, nodeId: string): Promise<boolean> {
  const rows = await read<{ one: number }>(scope, `SELECT 1 AS one FROM nodes n WHERE n.id = $1::uuid`, [nodeId]);
  return rows.length > 0;
}

export interface DiffRow {
  kind: 'node' | 'edge';
  id: string;
  before: EntityState | null;
  after: EntityState | null;
}

const touchedOf = (kind: 'node' | 'edge') => `(
  SELECT DISTINCT '${kind}'::text AS kind, v.entity_id AS id FROM graph_versions v
  WHERE v.entity_kind = '${kind}' AND v.changed_at > ${AS_OF_SQL('$1')} AND v.changed_at <= ${AS_OF_SQL('$2')}
    AND ($3::text IS NULL OR ('${kind}'::text, v.entity_id) > ($3::text, $4::uuid))
  ORDER BY 2 LIMIT $5)`;

/**
 * The entities some version in (from, to] touched, after the cursor (kind, id), at most `limit`,
 * each with its state at `from` and at `to` (null where it did not exist). Edges sort before nodes.
 */
export const readDiffPage = (
  m: EntityManager,
  page: { from: string; to: string; after: { kind: string; id: string } | null; limit: number },
) =>
  queryRows<DiffRow>(
    m,
    `WITH touched AS MATERIALIZED (
       SELECT * FROM (${touchedOf('edge')} UNION ALL ${touchedOf('node')}) t ORDER BY kind, id LIMIT $5),
     node_ids AS (SELECT coalesce(array_agg(id), '{}') AS a FROM touched WHERE kind = 'node'),
     edge_ids AS (SELECT coalesce(array_agg(id), '{}') AS a FROM touched WHERE kind = 'edge'),
     before AS (
       SELECT 'node'::text AS kind, p.id, p.state FROM weft_nodes_as_of((SELECT a FROM node_ids), ${AS_OF_SQL('$1')}) p
       UNION ALL
       SELECT 'edge', p.id, p.state FROM weft_edges_as_of((SELECT a FROM edge_ids), ${AS_OF_SQL('$1')}) p),
     after AS (
       SELECT 'node'::text AS kind, p.id, p.state FROM weft_nodes_as_of((SELECT a FROM node_ids), ${AS_OF_SQL('$2')}) p
       UNION ALL
       SELECT 'edge', p.id, p.state FROM weft_edges_as_of((SELECT a FROM edge_ids), ${AS_OF_SQL('$2')}) p)
     SELECT t.kind, t.id, b.state AS before, a.state AS after
     FROM touched t
     LEFT JOIN before b ON b.kind = t.kind AND b.id = t.id
     LEFT JOIN after a ON a.kind = t.kind AND a.id = t.id
     ORDER BY t.kind, t.id`,
    [page.from, page.to, page.after?.kind ?? null, page.after?.id ?? null, page.limit],
  );

/** Deletes versions older than the retention, across every workspace, at most `batchSize` (a definer function). */
export const purgeVersions = (m: EntityManager, retentionDays: number, batchSize: number) =>
  queryFirst<{ deleted: number }>(m, `SELECT weft_purge_graph_versions(make_interval(days => $1), $2) AS deleted`, [
    retentionDays,
    batchSize,
  ]).then((row) => row?.deleted ?? 0);
