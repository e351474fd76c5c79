import type { MigrationInterface, QueryRunner } from 'typeorm';

/**
 * Issue 40 item 4: a budget approval's decision is a link of its run's audit chain (kind BUDGET), as a
 * step approval's is (APPROVAL): who raised the budget, by how much, or who ended the run there.
 */
export class BudgetAudit1763780022550 implements MigrationInterface {
  name = 'BudgetAudit1763780022550';

  async up(q: QueryRunner): Promise<void> {
    await q.query(`
ALTER TABLE run_audit DROP CONSTRAINT IF EXISTS run_audit_kind_check;
ALTER TABLE run_audit ADD CONSTRAINT run_audit_kind_check
  CHECK (kind IN ('TOOL', 'APPROVAL', 'DECISION', 'RERUN', 'VOTE', 'BUDGET'));
`);
  }

  async down(q: QueryRunner): Promise<void> {
    await q.query(`
DELETE FROM run_audit WHERE kind = 'BUDGET';
ALTER TABLE run_audit DROP CONSTRAINT IF EXISTS run_audit_kind_check;
ALTER TABLE run_audit ADD CONSTRAINT run_audit_kind_check
  CHECK (kind IN ('TOOL', 'APPROVAL', 'DECISION', 'RERUN', 'VOTE'));
`);
  }
}
