import type { EntityManager } from 'typeorm';
import { LIMITS } from '../limits';
import type { Principal } from '../platform/auth/principal';
import { scopeOf } from '../platform/auth/principal';
import type { UnitOfWork } from '../platform/db/unit-of-work';
import { NotFoundError } from '../platform/errors';
import type { TypeCatalogRow } from './schemas';

const COLUMNS = `name, kind, display_name, description, row_count::int AS row_count, last_seen_at, common_property_keys,
  properties, created_at, updated_at`;

interface Row extends Omit<TypeCatalogRow, 'last_seen_at' | 'created_at' | 'updated_at'> {
  last_seen_at: Date | null;
  created_at: Date;
  updated_at: Date;
}

const toResponse = (row: Row): TypeCatalogRow => ({
  ...row,
  last_seen_at: row.last_seen_at?.toISOString() ?? null,
  created_at: row.created_at.toISOString(),
  updated_at: row.updated_at.toISOString(),
});

export interface TypeCatalogRefresh {
  node_types: number;
  edge_types: number;
  removed: number;
}

/**
 * Contract 2.3's daily task for the transaction's workspace: recount live rows and their most
 * frequent property keys per (kind, name), upsert every type still in use, soft-delete the ones
 * no live row has any more, and write a `type_stats_refresh` event. Free of charge.
 */
export async function refreshTypeCatalog(m: EntityManager, workspaceId: string): Promise<TypeCatalogRefresh> {
  const [result]: TypeCatalogRefresh[] = await m.query(
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
         SELECT kind, name, key, c, row_number() OVER (PARTITION BY kind, name ORDER BY c DESC, key) AS rn FROM key_counts) r
       WHERE rn <= $2 GROUP BY kind, name),
     upserted AS (
       INSERT INTO type_catalog AS t (workspace_id, kind, name, row_count, last_seen_at, common_property_keys, is_deleted, updated_at)
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
  // Best effort (contract 2.3): the refresh stands even if the event row cannot be written.
  await m.query(`SAVEPOINT type_stats_event`);
  try {
    await m.query(`INSERT INTO events (workspace_id, event_type, payload) VALUES ($1, 'type_stats_refresh', $2)`, [
      workspaceId,
      JSON.stringify(result),
    ]);
    await m.query(`RELEASE SAVEPOINT type_stats_event`);
  } catch {
    await m.query(`ROLLBACK TO SAVEPOINT type_stats_event`);
  }
  return result!;
}

/** The type catalog (contract 2.3): live rows only. */
export function createTypeCatalogService(deps: { uow: UnitOfWork }) {
  const { uow } = deps;
  return {
    async list(principal: Principal, kind?: 'node' | 'edge'): Promise<TypeCatalogRow[]> {
      const rows: Row[] = await uow(scopeOf(principal), (m) =>
        m.query(
          `SELECT ${COLUMNS} FROM type_catalog WHERE NOT is_deleted AND ($1::text IS NULL OR kind = $1) ORDER BY kind DESC, name`,
          [kind ?? null],
        ),
      );
      return rows.map(toResponse);
    },

    async get(principal: Principal, name: string, kind?: 'node' | 'edge'): Promise<TypeCatalogRow> {
      const [row]: Row[] = await uow(scopeOf(principal), (m) =>
        m.query(
          `SELECT ${COLUMNS} FROM type_catalog WHERE NOT is_deleted AND name = $1 AND ($2::text IS NULL OR kind = $2)
           ORDER BY kind DESC LIMIT 1`,
          [name, kind ?? null],
        ),
      );
      if (!row) throw new NotFoundError('Type not found');
      return toResponse(row);
    },

    refresh: (workspaceId: string) => uow({ workspaceId }, (m) => refreshTypeCatalog(m, workspaceId)),
  };
}

export type TypeCatalogService = ReturnType<typeof createTypeCatalogService>;
