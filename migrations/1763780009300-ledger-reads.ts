import type { MigrationInterface, QueryRunner } from 'typeorm';

/**
 * `GET /v1/billing/ledger` reads a workspace's rows newest first, keyset-paged on (created_at, id):
 * without this index every page would sort the workspace's whole ledger (a row per search and embedding).
 */
export class LedgerReads1763780009300 implements MigrationInterface {
  name = 'LedgerReads1763780009300';

  async up(q: QueryRunner): Promise<void> {
    await q.query(
      `CREATE INDEX credit_ledger_workspace_recent_idx ON credit_ledger (workspace_id, created_at DESC, id DESC)`,
    );
  }

  async down(q: QueryRunner): Promise<void> {
    await q.query(`DROP INDEX IF EXISTS credit_ledger_workspace_recent_idx`);
  }
}
