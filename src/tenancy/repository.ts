import type { DataSource } from 'typeorm';

/**
 * Workspace ids after `after`, in id order, for maintenance passes that visit every workspace.
 * `workspaces` carries no row-level security; the work for each one runs in its own unit of work.
 */
export async function workspaceIdsAfter(
  dataSource: DataSource,
  after: string | null,
  batch: number,
): Promise<string[]> {
  const rows: { id: string }[] = await dataSource.query(
    `SELECT id FROM workspaces WHERE $1::uuid IS NULL OR id > $1::uuid ORDER BY id LIMIT $2`,
    [after, batch],
  );
  return rows.map((row) => row.id);
}
