import type { MigrationInterface, QueryRunner } from 'typeorm';
import { dropWorkspaceRlsSql, workspaceRlsSql } from './rls';

/**
 * Issue 32 part 1: approval rules per workspace (`/v1/approval-policies`, plural; the singular
 * `approval_policies` table of issue 23 says who may resolve). Each PUT appends a version, never
 * rewrites one, so a step's recorded decision always names the rules that made it. A step records
 * the decision taken for it at execution time (`policy_decision`: version, action, rule index).
 */
export class ApprovalRules1763780012600 implements MigrationInterface {
  name = 'ApprovalRules1763780012600';

  async up(q: QueryRunner): Promise<void> {
    await q.query(`
CREATE TABLE approval_rule_versions (
  workspace_id uuid NOT NULL REFERENCES workspaces(id),
  version integer NOT NULL CHECK (version > 0),
  default_action text NOT NULL CHECK (default_action IN ('allow', 'require_approval', 'block')),
  rules jsonb NOT NULL,
  updated_by uuid NOT NULL REFERENCES users(id),
  created_at timestamptz NOT NULL DEFAULT now(),
  PRIMARY KEY (workspace_id, version)
);

ALTER TABLE run_steps ADD COLUMN policy_decision jsonb;
`);
    await q.query(workspaceRlsSql('approval_rule_versions'));
  }

  async down(q: QueryRunner): Promise<void> {
    await q.query(`
ALTER TABLE run_steps DROP COLUMN IF EXISTS policy_decision;
${dropWorkspaceRlsSql('approval_rule_versions')}
DROP TABLE approval_rule_versions;`);
  }
}
