import type { MigrationInterface, QueryRunner } from 'typeorm';

/**
 * Issue 32 part 2: an approval may be approved with an edited input (kept beside the original, which
 * `input` still holds) or answered with a reviewer's message for an llm run (`responded`: the step
 * does not run, the model gets the message). No new table: run_approvals' row-level security covers it.
 */
export class ApprovalEdits1763780012610 implements MigrationInterface {
  name = 'ApprovalEdits1763780012610';

  async up(q: QueryRunner): Promise<void> {
    await q.query(`
ALTER TABLE run_approvals
  ADD COLUMN edited_input jsonb,
  ADD COLUMN response text,
  DROP CONSTRAINT IF EXISTS run_approvals_status_check,
  ADD CONSTRAINT run_approvals_status_check
    CHECK (status IN ('pending', 'approved', 'rejected', 'cancelled', 'responded'));
`);
  }

  async down(q: QueryRunner): Promise<void> {
    await q.query(`
UPDATE run_approvals SET status = 'rejected' WHERE status = 'responded';
ALTER TABLE run_approvals
  DROP CONSTRAINT IF EXISTS run_approvals_status_check,
  ADD CONSTRAINT run_approvals_status_check CHECK (status IN ('pending', 'approved', 'rejected', 'cancelled')),
  DROP COLUMN IF EXISTS response,
  DROP COLUMN IF EXISTS edited_input;
`);
  }
}
