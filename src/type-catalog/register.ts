import type { EntityManager } from 'typeorm';

export type TypeKind = 'node' | 'edge';

/**
 * Registers a type in the catalog the first time it is seen (contract 2.1), and revives a row
 * the daily recompute had soft-deleted. Counts are not bumped here: a counter row shared by every
 * writer of a type would serialise them (and deadlock writers that touch two types in opposite
 * orders); the daily recompute owns row_count, last_seen_at and common_property_keys.
 */
export async function registerType(m: EntityManager, workspaceId: string, kind: TypeKind, name: string): Promise<void> {
  const [existing]: { is_deleted: boolean }[] = await m.query(
    `SELECT is_deleted FROM type_catalog WHERE workspace_id = $1 AND kind = $2 AND name = $3`,
    [workspaceId, kind, name],
  );
  if (existing && !existing.is_deleted) return;
  if (existing) {
    await m.query(
      `UPDATE type_catalog SET is_deleted = false, last_seen_at = now(), updated_at = now()
       WHERE workspace_id = $1 AND kind = $2 AND name = $3 AND is_deleted`,
      [workspaceId, kind, name],
    );
    return;
  }
  await m.query(
    `INSERT INTO type_catalog (workspace_id, kind, name, row_count, last_seen_at) VALUES ($1, $2, $3, 1, now())
     ON CONFLICT (workspace_id, kind, name) DO NOTHING`,
    [workspaceId, kind, name],
  );
}
