import type { EntityManager } from 'typeorm';
import { In } from 'typeorm';
import { importanceSql, importanceSqlParams } from '../importance/formula';
import type { ImportanceSettings } from '../ontology-config/schemas';
import { iso } from '../platform/dates';
import { affectedRows, queryFirst, queryRows } from '../platform/db/query';
import type { Scope, ScopedRead } from '../platform/db/unit-of-work';
import { Node } from './entities';
import type { EdgeResponse, NodeResponse } from './schemas';

/*
 * Nodes and edges. Most statements here are raw SQL on purpose: the reads by id and the lists are
 * the hottest paths (one `weft_scoped_read` statement each, see architecture.md: an entity
 * findOneBy costs 2.2x), and the writes answer with the row in the same statement (RETURNING).
 * Entities serve the rest.
 */

/**
 * Columns of `nodes` that `toNodeResponse` reads; select with `SELECT ${NODE_COLUMNS} FROM nodes n`. The SQL
 * function weft_node_with_edges (`ontology.get_node`) lists them too: a new one goes there as well.
 */
export const NODE_COLUMNS = `n.id, n.workspace_id, n.type, n.name, n.properties, n.importance_score, n.base_salience,
  n.reference_count, n.connection_id, n.has_embedding, n.last_touch_at, n.created_at, n.updated_at, n.is_deleted`;

export interface NodeRow {
  id: string;
  workspace_id: string;
  type: string;
  name: string;
  properties: Record<string, unknown>;
  importance_score: number;
  base_salience: number;
  reference_count: number;
  connection_id: string | null;
  has_embedding: boolean;
  last_touch_at: Date | string;
  created_at: Date | string;
  updated_at: Date | string;
  is_deleted: boolean;
  /** pgvector's text form, '[0.1,0.2,...]', when selected. */
  embedding?: string | null;
}

export const EDGE_COLUMNS = `e.id, e.workspace_id, e.type, e.source_node_id, e.target_node_id, e.properties,
  e.reasoning, e.evidence, e.created_at, e.is_deleted, e.valid_from, e.valid_to`;

export interface EdgeRow {
  id: string;
  workspace_id: string;
  type: string;
  source_node_id: string;
  target_node_id: string;
  properties: Record<string, unknown>;
  reasoning: string | null;
  evidence: string | null;
  created_at: Date | string;
  is_deleted: boolean;
  /** When the fact began to hold (issue 31); defaults to when it was written. */
  valid_from: Date | string;
  /** When it stopped holding; null while it holds. */
  valid_to: Date | string | null;
}

// weft_scoped_read answers JSON, so its timestamps arrive as strings; the unit of work's as Dates.

export function toNodeResponse(row: NodeRow): NodeResponse {
  const response: NodeResponse = {
    id: row.id,
    workspace_id: row.workspace_id,
    type: row.type,
    name: row.name,
    properties: row.properties,
    importance_score: row.importance_score,
    base_salience: row.base_salience,
    reference_count: row.reference_count,
    connection_id: row.connection_id,
    has_embedding: row.has_embedding,
    last_touch_at: iso(row.last_touch_at),
    created_at: iso(row.created_at),
    updated_at: iso(row.updated_at),
    is_deleted: row.is_deleted,
  };
  if (row.embedding) response.embedding = JSON.parse(row.embedding) as number[];
  return response;
}

export const toEdgeResponse = (row: EdgeRow): EdgeResponse => ({
  ...row,
  created_at: iso(row.created_at),
  valid_from: iso(row.valid_from),
  valid_to: iso(row.valid_to),
});

// ---- reads through weft_scoped_read (one statement, one round trip; parameters arrive as text) ----

export async function readLiveNode(
  read: ScopedRead,
  scope: Scope,
  nodeId: string,
  includeEmbedding: boolean,
): Promise<NodeRow | undefined> {
  const [row] = await read<NodeRow>(
    scope,
    `SELECT ${NODE_COLUMNS}${includeEmbedding ? ', n.embedding::text AS embedding' : ''}
     FROM nodes n WHERE n.id = $1::uuid AND NOT n.is_deleted`,
    [nodeId],
  );
  return row;
}

export interface Page {
  limit: number;
  offset: number;
}

export const readNodePage = (
  read: ScopedRead,
  scope: Scope,
  filter: Page & { type: string | null; connectionId: string | null },
) =>
  read<NodeRow>(
    scope,
    `SELECT ${NODE_COLUMNS} FROM nodes n
     WHERE NOT n.is_deleted AND ($1::text IS NULL OR n.type = $1::text)
       AND ($2::uuid IS NULL OR n.connection_id = $2::uuid)
     ORDER BY n.created_at, n.id LIMIT $3::int OFFSET $4::int`,
    [filter.type, filter.connectionId, filter.limit, filter.offset],
  );

export async function readLiveEdge(read: ScopedRead, scope: Scope, edgeId: string): Promise<EdgeRow | undefined> {
  const [row] = await read<EdgeRow>(
    scope,
    `SELECT ${EDGE_COLUMNS} FROM edges e WHERE e.id = $1::uuid AND NOT e.is_deleted`,
    [edgeId],
  );
  return row;
}

export const readEdgePage = (
  read: ScopedRead,
  scope: Scope,
  filter: Page & { sourceNodeId: string | null; targetNodeId: string | null; type: string | null },
) =>
  read<EdgeRow>(
    scope,
    `SELECT ${EDGE_COLUMNS} FROM edges e
     WHERE NOT e.is_deleted AND ($1::uuid IS NULL OR e.source_node_id = $1::uuid)
       AND ($2::uuid IS NULL OR e.target_node_id = $2::uuid)
       AND ($3::text IS NULL OR e.type = $3::text)
     ORDER BY e.created_at, e.id LIMIT $4::int OFFSET $5::int`,
    [filter.sourceNodeId, filter.targetNodeId, filter.type, filter.limit, filter.offset],
  );

// ---- name matching (typeahead, the neighbourhood's q) ----

/** `%` and `_` in a user's text are literals, not wildcards. */
export const likePattern = (text: string) => `%${text.replace(/[\\%_]/g, (c) => `\\${c}`)}%`;

/** Trigrams need three characters; below that an index walk by importance is the better plan. */
export const usesTrigram = (q: string) => q.length >= 3;

/**
 * Exact (case-insensitive) matches first, then substring matches by importance. The matching
 * runs in `weft_name_matches` (see its migration: under row-level security neither lower() nor
 * ILIKE may use an index); the rows are read back under the caller's own policy.
 * $1 q, $2 LIKE pattern, $3 type or NULL, $4 limit, $5 use the trigram index.
 */
export const typeaheadSql = (columns: string) => `
SELECT ${columns}, m.match_rank
FROM weft_name_matches($1::text, $2::text, $3::text, $4::int, $5::boolean) m JOIN nodes n ON n.id = m.id
WHERE NOT n.is_deleted ORDER BY m.match_rank, n.importance_score DESC, n.id LIMIT $4::int`;

/** The parameters of `typeaheadSql`. */
export const typeaheadParams = (q: string, type: string | null, limit: number) => [
  q,
  likePattern(q),
  type,
  limit,
  usesTrigram(q),
];

/** The typeahead: one scoped statement (parameters cast, as createScopedRead binds them as text). */
export const readNodesByName = (read: ScopedRead, scope: Scope, q: string, type: string | null, limit: number) =>
  read<NodeRow>(scope, typeaheadSql(NODE_COLUMNS), typeaheadParams(q, type, limit));

/** The typeahead without a query: the oldest live nodes (of a type). */
export const readFirstNodes = (read: ScopedRead, scope: Scope, type: string | null, limit: number) =>
  read<NodeRow>(
    scope,
    `SELECT ${NODE_COLUMNS} FROM nodes n WHERE NOT n.is_deleted AND ($1::text IS NULL OR n.type = $1::text)
     ORDER BY n.created_at, n.id LIMIT $2::int`,
    [type, limit],
  );

// ---- writes (in the caller's unit of work) ----

export interface NodeValues {
  workspaceId: string;
  type: string;
  name: string;
  properties: Record<string, unknown>;
  connectionId: string | null;
  baseSalience: number;
}

/** A new node at age 0: its importance is its base salience, held between the workspace's floor and ceiling. */
export async function insertNode(m: EntityManager, values: NodeValues, settings: ImportanceSettings): Promise<NodeRow> {
  const row = await queryFirst<NodeRow>(
    m,
    `INSERT INTO nodes AS n (workspace_id, type, name, properties, connection_id, base_salience, importance_score)
     VALUES ($1, $2, $3, $4, $5, $6, LEAST($8::float8, GREATEST($7::float8, $6::float8)))
     RETURNING ${NODE_COLUMNS}`,
    [
      values.workspaceId,
      values.type,
      values.name,
      JSON.stringify(values.properties),
      values.connectionId,
      values.baseSalience,
      settings.min_importance,
      settings.max_importance,
    ],
  );
  if (!row) throw new Error('INSERT … RETURNING gave no row');
  return row;
}

/**
 * One reference of each live node in `ids`: reference_count + 1, last_touch_at = now(), and the
 * importance recomputed from the new values. Returns the ids it touched (the live ones). The
 * caller sorts the ids, so that concurrent writers lock shared hubs in the same order.
 */
export async function touchLiveNodes(
  m: EntityManager,
  ids: readonly string[],
  settings: ImportanceSettings,
): Promise<string[]> {
  const rows = await queryRows<{ id: string }>(
    m,
    `UPDATE nodes n SET reference_count = n.reference_count + 1, last_touch_at = now(),
       importance_score = ${importanceSql(2, { referenceCount: '(n.reference_count + 1)', lastTouchAt: 'now()' })}
     WHERE n.id = ANY($1::uuid[]) AND NOT n.is_deleted
     RETURNING n.id`,
    [ids, ...importanceSqlParams(settings)],
  );
  return rows.map((row) => row.id);
}

export interface EdgeValues {
  workspaceId: string;
  type: string;
  sourceNodeId: string;
  targetNodeId: string;
  properties: Record<string, unknown>;
  reasoning: string | null;
  evidence: string | null;
  /** Null: from now. */
  validFrom?: string | null;
  validTo?: string | null;
}

export async function insertEdge(m: EntityManager, values: EdgeValues): Promise<EdgeRow> {
  const row = await queryFirst<EdgeRow>(
    m,
    `INSERT INTO edges AS e (workspace_id, type, source_node_id, target_node_id, properties, reasoning, evidence,
       valid_from, valid_to)
     VALUES ($1, $2, $3, $4, $5, $6, $7, coalesce($8::timestamptz, LEAST(now(), $9::timestamptz)), $9::timestamptz)
     RETURNING ${EDGE_COLUMNS}`,
    [
      values.workspaceId,
      values.type,
      values.sourceNodeId,
      values.targetNodeId,
      JSON.stringify(values.properties),
      values.reasoning,
      values.evidence,
      values.validFrom ?? null,
      values.validTo ?? null,
    ],
  );
  if (!row) throw new Error('INSERT … RETURNING gave no row');
  return row;
}

/** The live node's name and type, locked until the transaction ends; null when there is none. */
export const lockLiveNode = (m: EntityManager, nodeId: string) =>
  m.getRepository(Node).findOne({
    select: { id: true, name: true, type: true },
    where: { id: nodeId, isDeleted: false },
    lock: { mode: 'pessimistic_write' },
  });

/** Whether any of `ids` is a live node this workspace can see. */
export const anyLiveNode = (m: EntityManager, ids: readonly string[]) =>
  m.getRepository(Node).existsBy({ id: In([...ids]), isDeleted: false });

export interface NodeChanges {
  name: string | null;
  type: string | null;
  /** Merged into the stored properties. */
  properties: Record<string, unknown>;
  /** Keys removed from the stored properties. */
  removedKeys: string[];
}

// Raw: the jsonb merge and key removal have no query-builder form, and the row comes back in the same statement.
export const updateNode = (m: EntityManager, nodeId: string, changes: NodeChanges) =>
  queryFirst<NodeRow>(
    m,
    `UPDATE nodes n SET name = COALESCE($2, n.name), type = COALESCE($3, n.type),
       properties = (n.properties || $4::jsonb) - $5::text[], updated_at = now()
     WHERE n.id = $1 RETURNING ${NODE_COLUMNS}`,
    [nodeId, changes.name, changes.type, JSON.stringify(changes.properties), changes.removedKeys],
  );

export const softDeleteNode = (m: EntityManager, nodeId: string) =>
  queryFirst<NodeRow>(
    m,
    `UPDATE nodes n SET is_deleted = true, deleted_at = now(), updated_at = now()
     WHERE n.id = $1 AND NOT n.is_deleted RETURNING ${NODE_COLUMNS}`,
    [nodeId],
  );

/** Soft-deletes every live node of the type; returns their ids. */
export async function softDeleteNodesOfType(m: EntityManager, type: string): Promise<string[]> {
  const rows = await queryRows<{ id: string }>(
    m,
    `UPDATE nodes SET is_deleted = true, deleted_at = now(), updated_at = now()
     WHERE type = $1 AND NOT is_deleted RETURNING id`,
    [type],
  );
  return rows.map((row) => row.id);
}

/** Soft-deletes every live edge with an end in `nodeIds`; returns how many. */
export const softDeleteIncidentEdges = (m: EntityManager, nodeIds: readonly string[]) =>
  affectedRows(
    m,
    `UPDATE edges SET is_deleted = true, deleted_at = now()
     WHERE NOT is_deleted AND (source_node_id = ANY($1::uuid[]) OR target_node_id = ANY($1::uuid[]))`,
    [nodeIds],
  );

export const softDeleteEdge = (m: EntityManager, edgeId: string) =>
  queryFirst<EdgeRow>(
    m,
    `UPDATE edges e SET is_deleted = true, deleted_at = now() WHERE e.id = $1 AND NOT e.is_deleted
     RETURNING ${EDGE_COLUMNS}`,
    [edgeId],
  );

/**
 * Closes the validity (valid_to = now) of the source's other current facts of a functional type
 * (src/rules/graph.ts): live edges of the same type (any case) from `sourceId` to another target,
 * still valid and begun by now. Returns their ids.
 */
export async function closeContradictedEdges(
  m: EntityManager,
  fact: { type: string; sourceId: string; targetId: string; exceptEdgeId: string },
): Promise<string[]> {
  const rows = await queryRows<{ id: string }>(
    m,
    `UPDATE edges e SET valid_to = now()
     WHERE NOT e.is_deleted AND upper(e.type) = upper($1) AND e.source_node_id = $2 AND e.target_node_id <> $3
       AND e.id <> $4 AND e.valid_to IS NULL AND e.valid_from <= now()
     RETURNING e.id`,
    [fact.type, fact.sourceId, fact.targetId, fact.exceptEdgeId],
  );
  return rows.map((row) => row.id);
}

/** Opens again the edges whose validity a prompt closed (its versions say which), for its undo. */
export const reopenEdgesClosedBy = (m: EntityManager, promptId: string) =>
  affectedRows(
    m,
    `UPDATE edges e SET valid_to = NULL
     WHERE e.valid_to IS NOT NULL AND e.id IN (
       SELECT v.entity_id FROM graph_versions v
       WHERE v.entity_kind = 'edge' AND v.prompt_id = $1 AND v.label = 'contradiction')`,
    [promptId],
  );

/** The oldest live node of this type whose name, trimmed, spaced and lower-cased, is `normalized`. */
export const findLiveNodeByName = (m: EntityManager, type: string, normalized: string) =>
  queryFirst<{ id: string }>(
    m,
    `SELECT id FROM nodes
     WHERE NOT is_deleted AND type = $1 AND lower(regexp_replace(btrim(name), '\\s+', ' ', 'g')) = $2
     ORDER BY created_at LIMIT 1`,
    [type, normalized],
  );

/** A live edge of this type between these two nodes, if the graph holds that fact already. */
/** A live edge's type and its ends' names, locked until the transaction ends (what a staged deletion shows). */
export const lockLiveEdgeLabel = (m: EntityManager, edgeId: string) =>
  queryFirst<{ type: string; source: string; target: string }>(
    m,
    `SELECT e.type, s.name AS source, t.name AS target
     FROM edges e JOIN nodes s ON s.id = e.source_node_id JOIN nodes t ON t.id = e.target_node_id
     WHERE e.id = $1 AND NOT e.is_deleted FOR UPDATE OF e`,
    [edgeId],
  );

/** Which of `edgeIds` are live edges, locked until the transaction ends with `lock`. */
export async function liveEdgeIds(m: EntityManager, edgeIds: readonly string[], lock: boolean): Promise<string[]> {
  if (edgeIds.length === 0) return [];
  const rows = await queryRows<{ id: string }>(
    m,
    `SELECT id FROM edges WHERE id = ANY ($1::uuid[]) AND NOT is_deleted${lock ? ' FOR UPDATE' : ''}`,
    [edgeIds],
  );
  return rows.map((row) => row.id);
}

export const findLiveEdge = (m: EntityManager, type: string, sourceId: string, targetId: string) =>
  queryFirst<{ id: string }>(
    m,
    `SELECT id FROM edges WHERE NOT is_deleted AND type = $1 AND source_node_id = $2 AND target_node_id = $3 LIMIT 1`,
    [type, sourceId, targetId],
  );
