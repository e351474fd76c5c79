import type { MigrationInterface, QueryRunner } from 'typeorm';

/**
 * A trigger whose filter keeps running out of its budget is suspended (issue 43 item 3, review NM-8):
 * the intake disables it and says why here; a PATCH that enables it again clears both. Both columns
 * are configuration (they change with `enabled`), so they bump the revision like any other.
 */
export class TriggerFilterSuspension1763780021000 implements MigrationInterface {
  name = 'TriggerFilterSuspension1763780021000';

  async up(q: QueryRunner): Promise<void> {
    await q.query(`
ALTER TABLE webhook_triggers ADD COLUMN suspended_reason text, ADD COLUMN suspended_at timestamptz;
`);
  }

  async down(q: QueryRunner): Promise<void> {
    await q.query(
      `ALTER TABLE webhook_triggers DROP COLUMN IF EXISTS suspended_reason, DROP COLUMN IF EXISTS suspended_at;`,
    );
  }
}
