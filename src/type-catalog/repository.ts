import type { EntityManager } from 'typeorm';
import { queryFirst } from '../platform/db/query';
import { LIMITS } from '../rules/limits';
import type { TypeKind } from './entities';
import { TypeCatalogEntry, WorkspaceEvent } from './entities';

/** The registration state of one type: absent, live, or soft-deleted by the recompute. */
export const findType = (m: EntityManager, workspaceId: string, kind: TypeKind, name: string) =>
  m.getRepository(TypeCatalogEntry).findOne({ select: { isDeleted: true }, where: { workspaceId, kind, name } });

export async function reviveType(m: EntityManager, workspaceId: string, kind: TypeKind, name: string): Promise<void> {
  await m
    .getRepository(TypeCatalogEntry)
    .update(
      { workspaceId, kind, name, isDeleted: true },
      { isDeleted: false, lastSeenAt: () => 'now()', updatedAt: () => 'now()' },
    );
}

/** Inserts a first-seen type; a concurrent writer that registered it first wins (ON CONFLICT DO NOTHING). */
export async function insertTypeIfAbsent(m: EntityManager, workspaceId: string, kind: TypeKind, name: string) {
  await m
    .createQueryBuilder()
    .insert()
    .into(TypeCatalogEntry)
    .values({ workspaceId, kind, name, rowCount: 1, lastSeenAt: () => 'now()' })
    .orIgnore()
    .execute();
}

export const listLiveTypes = (m: EntityManager, kind: TypeKind | undefined) =>
  m.getRepository(TypeCatalogEntry).find({
    where: { isDeleted: false, ...(kind ? { kind } : {}) },
    // 'node' sorts after 'edge': node types first.
    order: { kind: 'DESC', name: 'ASC' },
  });

/** A live type by name; the node type first when a node type and an edge type share it. */
export const findLiveType = (m: EntityManager, name: string, kind: TypeKind | undefined) =>
  m.getRepository(TypeCatalogEntry).findOne({
    where: { isDeleted: false, name, ...(kind ? { kind } : {}) },
    order: { kind: 'DESC' },
  });

export interface TypeCatalogRefresh {
  node_types: number;
  edge_types: number;
  removed: number;
}

/**
 * Recounts live rows and their most frequent property keys per (kind, name), upserts every type
 * still in use and soft-deletes the ones no live row has any more, in one statement. Raw: a
 * data-modifying CTE over jsonb_object_keys and window functions.
 */
export async function recountTypes(m: EntityManager, workspaceId: string): Promise<TypeCatalogRefresh> {
  const row = await queryFirst<TypeCatalogRefresh>(
    m,
    `WITH live AS (
       SELECT 'node'::text AS kind, type AS name, count(*) AS row_count, max(created_at) AS last_seen_at
       FROM nodes WHERE NOT is_deleted GROUP BY type
       UNION ALL
       SELECT 'edge', type, count(*), max(created_at) FROM edges WHERE NOT is_deleted GROUP BY type),
     key_counts AS (
       SELECT 'node'::text AS kind, n.type AS name, k.key, count(*) AS c
       FROM nodes n, jsonb_object_keys(n.properties) AS k(key) WHERE NOT n.is_deleted GROUP BY n.type, k.key
       UNION ALL
       SELECT 'edge', e.type, k.key, count(*)
       FROM edges e, jsonb_object_keys(e.properties) AS k(key) WHERE NOT e.is_deleted GROUP BY e.type, k.key),
     top_keys AS (
       SELECT kind, name, array_agg(key ORDER BY c DESC, key) AS keys FROM (
         SELECT kind, name, key, c, row_number() OVER (PARTITION BY kind, name ORDER BY c DESC, key) AS rn
           FROM key_counts) r
       WHERE rn <= $2 GROUP BY kind, name),
     upserted AS (
       INSERT INTO type_catalog AS t (workspace_id, kind, name, row_count, last_seen_at, common_property_keys,
         is_deleted, updated_at)
       SELECT $1, live.kind, live.name, live.row_count, live.last_seen_at, coalesce(top_keys.keys, '{}'), false, now()
       FROM live LEFT JOIN top_keys USING (kind, name)
       ON CONFLICT (workspace_id, kind, name) DO UPDATE SET row_count = EXCLUDED.row_count,
         last_seen_at = EXCLUDED.last_seen_at, common_property_keys = EXCLUDED.common_property_keys,
         is_deleted = false, updated_at = now()
       RETURNING t.kind),
     removed AS (
       UPDATE type_catalog t SET is_deleted = true, row_count = 0, updated_at = now()
       WHERE NOT t.is_deleted AND NOT EXISTS (SELECT 1 FROM live WHERE live.kind = t.kind AND live.name = t.name)
       RETURNING 1)
     SELECT (SELECT count(*) FROM upserted WHERE kind = 'node')::int AS node_types,
            (SELECT count(*) FROM upserted WHERE kind = 'edge')::int AS edge_types,
            (SELECT count(*) FROM removed)::int AS removed`,
    [workspaceId, LIMITS.commonPropertyKeys],
  );
  if (!row) throw new Error('the type recount returned no row');
  return row;
}

export async function insertEvent(
  m: EntityManager,
  workspaceId: string,
  eventType: string,
  payload: Record<string, unknown>,
): Promise<void> {
  await m.getRepository(WorkspaceEvent).insert({ workspaceId, eventType, payload });
}
