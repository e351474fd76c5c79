import type { MigrationInterface, QueryRunner } from 'typeorm';
import { dropWorkspaceRlsSql, workspaceRlsSql } from './rls';

/**
 * Separation of duties on approvals (issue 23 item 2):
 * - a workspace's approval policy: whether the user who dispatched a run may approve it through
 *   another credential of theirs (`when_alone`, the default with no row; `always`; `never`);
 * - the credential an approval was resolved with (its kind, and its id: a key's row, a JWT's jti);
 * - MCP tokens minted before lose `approvals:write`, which new ones never get. The owner role
 *   bypasses row-level security, so this reaches every workspace's tokens. Not undone on the way
 *   down: an agent's token should never have had the scope.
 */
export class ApprovalSeparation1763780010100 implements MigrationInterface {
  name = 'ApprovalSeparation1763780010100';

  async up(q: QueryRunner): Promise<void> {
    await q.query(`
CREATE TABLE approval_policies (
  workspace_id uuid PRIMARY KEY REFERENCES workspaces(id),
  dispatcher_may_approve text NOT NULL DEFAULT 'when_alone'
    CHECK (dispatcher_may_approve IN ('when_alone', 'always', 'never')),
  updated_by uuid NOT NULL REFERENCES users(id),
  updated_at timestamptz NOT NULL DEFAULT now()
);

ALTER TABLE run_approvals
  ADD COLUMN resolved_by_credential_kind text
    CHECK (resolved_by_credential_kind IN ('user_jwt', 'api_key', 'mcp_token')),
  ADD COLUMN resolved_by_credential_id uuid;

UPDATE api_keys SET scopes = array_remove(scopes, 'approvals:write')
  WHERE kind = 'mcp_token' AND 'approvals:write' = ANY (scopes);
`);
    await q.query(workspaceRlsSql('approval_policies'));
  }

  async down(q: QueryRunner): Promise<void> {
    await q.query(`
ALTER TABLE run_approvals DROP COLUMN resolved_by_credential_id, DROP COLUMN resolved_by_credential_kind;
${dropWorkspaceRlsSql('approval_policies')}
DROP TABLE approval_policies;`);
  }
}
