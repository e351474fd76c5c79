import type { MigrationInterface, QueryRunner } from 'typeorm';
import { dropWorkspaceRlsSql, workspaceRlsSql } from './rls';

/**
 * Issue 38 item 1: what each approval decides on, stored with its id, so the approvals inbox
 * (src/approvals) finds an approval's subject by it instead of trying each subject's table: a run's
 * step (`run_approvals`) or a staged change-set (`change_sets.approval_id`), later a budget or a
 * connector. Neither table is ever purged, so a row here always has its approval.
 */
export class ApprovalSubjects1763780017000 implements MigrationInterface {
  name = 'ApprovalSubjects1763780017000';

  async up(q: QueryRunner): Promise<void> {
    await q.query(`
CREATE TABLE approval_subjects (
  approval_id uuid PRIMARY KEY,
  workspace_id uuid NOT NULL REFERENCES workspaces(id),
  subject text NOT NULL,
  created_at timestamptz NOT NULL DEFAULT now()
);
INSERT INTO approval_subjects (approval_id, workspace_id, subject, created_at)
  SELECT id, workspace_id, 'run_step', requested_at FROM run_approvals
  UNION ALL
  SELECT approval_id, workspace_id, 'change_set', created_at FROM change_sets;
`);
    await q.query(workspaceRlsSql('approval_subjects'));
  }

  async down(q: QueryRunner): Promise<void> {
    await q.query(dropWorkspaceRlsSql('approval_subjects'));
    await q.query(`DROP TABLE approval_subjects;`);
  }
}
