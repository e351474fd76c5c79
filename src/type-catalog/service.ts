import type { EntityManager } from 'typeorm';
import type { Principal } from '../platform/auth/principal';
import { scopeOf } from '../platform/auth/principal';
import type { UnitOfWork } from '../platform/db/unit-of-work';
import { NotFoundError } from '../platform/errors';
import type { TypeCatalogEntry, TypeKind } from './entities';
import type { TypeCatalogRefresh } from './repository';
import {
  findLiveType,
  findType,
  insertEvent,
  insertTypeIfAbsent,
  listLiveTypes,
  recountTypes,
  reviveType,
} from './repository';
import type { TypeCatalogRow } from './schemas';

export type { TypeCatalogRefresh } from './repository';

const toResponse = (row: TypeCatalogEntry): TypeCatalogRow => ({
  name: row.name,
  kind: row.kind,
  display_name: row.displayName,
  description: row.description,
  row_count: row.rowCount,
  last_seen_at: row.lastSeenAt?.toISOString() ?? null,
  common_property_keys: row.commonPropertyKeys,
  properties: row.properties,
  created_at: row.createdAt.toISOString(),
  updated_at: row.updatedAt.toISOString(),
});

/**
 * Registers a type in the catalog the first time it is seen (knowledge-graph-service-api.md §2.1), and revives a row
 * the daily recompute had soft-deleted. Counts are not bumped here: a counter row shared by every
 * writer of a type would serialise them (and deadlock writers that touch two types in opposite
 * orders); the daily recompute owns row_count, last_seen_at and common_property_keys.
 */
export async function registerType(m: EntityManager, workspaceId: string, kind: TypeKind, name: string): Promise<void> {
  const existing = await findType(m, workspaceId, kind, name);
  if (existing && !existing.isDeleted) return;
  if (existing) await reviveType(m, workspaceId, kind, name);
  else await insertTypeIfAbsent(m, workspaceId, kind, name);
}

/**
 * knowledge-graph-service-api.md §2.3's daily task for the transaction's workspace: recount live rows and their most
 * frequent property keys per (kind, name), upsert every type still in use, soft-delete the ones
 * no live row has any more, and write a `type_stats_refresh` event. Free of charge.
 */
export async function refreshTypeCatalog(m: EntityManager, workspaceId: string): Promise<TypeCatalogRefresh> {
  const result = await recountTypes(m, workspaceId);
  // Best effort (knowledge-graph-service-api.md §2.3): the refresh stands even if the event row cannot be written. The
  // nested transaction is a savepoint, so a failed insert does not abort the refresh's own.
  try {
    await m.transaction((inner) => insertEvent(inner, workspaceId, 'type_stats_refresh', { ...result }));
  } catch {
    // Nothing to undo: the savepoint was rolled back.
  }
  return result;
}

/** The type catalog (knowledge-graph-service-api.md §2.3): live rows only. */
export function createTypeCatalogService(deps: { uow: UnitOfWork }) {
  const { uow } = deps;
  return {
    async list(principal: Principal, kind?: TypeKind): Promise<TypeCatalogRow[]> {
      const rows = await uow(scopeOf(principal), (m) => listLiveTypes(m, kind));
      return rows.map(toResponse);
    },

    async get(principal: Principal, name: string, kind?: TypeKind): Promise<TypeCatalogRow> {
      const row = await uow(scopeOf(principal), (m) => findLiveType(m, name, kind));
      if (!row) throw new NotFoundError('Type not found');
      return toResponse(row);
    },

    refresh: (workspaceId: string) => uow({ workspaceId }, (m) => refreshTypeCatalog(m, workspaceId)),
  };
}

export type TypeCatalogService = ReturnType<typeof createTypeCatalogService>;
