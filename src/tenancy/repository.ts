import type { DataSource, EntityManager } from 'typeorm';
import { MoreThan, Not } from 'typeorm';
import { affectedRows, queryFirst } from '../platform/db/query';
import { Membership, Workspace } from './entities';

/**
 * Workspace ids after `after`, in id order, for maintenance passes that visit every workspace.
 * `workspaces` carries no row-level security; the work for each one runs in its own unit of work.
 */
export async function workspaceIdsAfter(
  dataSource: DataSource,
  after: string | null,
  batch: number,
): Promise<string[]> {
  const rows = await dataSource.getRepository(Workspace).find({
    select: { id: true },
    where: after === null ? {} : { id: MoreThan(after) },
    order: { id: 'ASC' },
    take: batch,
  });
  return rows.map((row) => row.id);
}

/** The user's other workspaces; the unit of work runs as that user (memberships are user-scoped). */
export async function otherWorkspacesOf(m: EntityManager, userId: string, workspaceId: string): Promise<string[]> {
  const rows = await m.getRepository(Membership).find({
    select: { workspaceId: true },
    where: { userId, workspaceId: Not(workspaceId) },
  });
  return rows.map((row) => row.workspaceId);
}

/**
 * Adds to a tenant's balance and answers the new balance; undefined when there is no such tenant.
 * Raw: the increment happens in the statement (no read-modify-write) and RETURNING gives the result.
 */
export async function addToBalance(m: EntityManager, tenantId: string, amount: number): Promise<number | undefined> {
  const row = await queryFirst<{ credit_balance: string }>(
    m,
    `UPDATE tenants SET credit_balance = credit_balance + $2 WHERE id = $1 RETURNING credit_balance`,
    [tenantId, amount],
  );
  // bigint arrives as a string; balances stay far below 2^53.
  return row ? Number(row.credit_balance) : undefined;
}

/** A tenant-level ledger row (no workspace: no workspace session can see it), as an operator's grant writes. */
export async function insertTenantLedgerRow(m: EntityManager, tenantId: string, kind: string, amount: number) {
  // The ledger's entity belongs to the credits feature; this is the one tenant-level writer.
  await affectedRows(m, `INSERT INTO credit_ledger (tenant_id, workspace_id, kind, amount) VALUES ($1, NULL, $2, $3)`, [
    tenantId,
    kind,
    amount,
  ]);
}
