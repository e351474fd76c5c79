import type { MigrationInterface, QueryRunner } from 'typeorm';
import { dropWorkspaceRlsSql, workspaceRlsSql } from './rls';

/**
 * The code graph (issue 15): code.* nodes are ordinary graph nodes; `code_symbols` maps each
 * symbol's stable key (file path, path#Class, path#Class.method, path#fn, path#test title, commit
 * sha) within a repository to its node, so a re-index updates the node in place and keeps its id
 * (claims and findings point at ids). `seen_run` is the indexing pass that last sent the key: the
 * pass's last batch soft-deletes the repository's symbols it did not see.
 */
export class CodeGraph1763780009200 implements MigrationInterface {
  name = 'CodeGraph1763780009200';

  async up(q: QueryRunner): Promise<void> {
    await q.query(`
CREATE TABLE code_symbols (
  workspace_id uuid NOT NULL REFERENCES workspaces(id),
  repo text NOT NULL,
  key text NOT NULL,
  node_id uuid NOT NULL,
  seen_run uuid NOT NULL,
  updated_at timestamptz NOT NULL DEFAULT now(),
  PRIMARY KEY (workspace_id, repo, key),
  FOREIGN KEY (workspace_id, node_id) REFERENCES nodes (workspace_id, id)
);
CREATE UNIQUE INDEX code_symbols_node_idx ON code_symbols (node_id);
CREATE INDEX code_symbols_run_idx ON code_symbols (workspace_id, repo, seen_run);
-- symbol-context resolves a (name, type) pair by key as well as by name.
CREATE INDEX code_symbols_key_idx ON code_symbols (workspace_id, key);
${workspaceRlsSql('code_symbols')}

-- symbol-context by (name, type), code types only.
CREATE INDEX nodes_code_name_idx ON nodes (workspace_id, type, name) WHERE NOT is_deleted AND type LIKE 'code.%';
-- The end-of-pass sweep of a repository's edges.
CREATE INDEX edges_code_repo_idx ON edges (workspace_id, (properties->>'code_repo'))
  WHERE NOT is_deleted AND properties ? 'code_repo';
`);
  }

  async down(q: QueryRunner): Promise<void> {
    await q.query(`
DROP INDEX IF EXISTS nodes_code_name_idx, edges_code_repo_idx;
${dropWorkspaceRlsSql('code_symbols')}
DROP TABLE IF EXISTS code_symbols;
`);
  }
}
