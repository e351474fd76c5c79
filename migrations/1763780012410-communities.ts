import type { MigrationInterface, QueryRunner } from 'typeorm';
import { dropWorkspaceRlsSql, workspaceRlsSql } from './rls';

/**
 * Communities (issue 30 part 3, src/communities/): the communities themselves are nodes of type
 * `community` with MEMBER_OF edges from their members, so every graph read, search and citation
 * sees them; this table only remembers each workspace's last pass, which decides whether the
 * graph has changed enough for the next one (docs/behaviour.md "Communities"). Forced RLS like
 * every workspace table. (nodes_workspace_type_importance_idx already finds a workspace's
 * communities by importance.)
 */
export class Communities1763780012410 implements MigrationInterface {
  name = 'Communities1763780012410';

  async up(q: QueryRunner): Promise<void> {
    await q.query(`
CREATE TABLE community_passes (
  workspace_id uuid PRIMARY KEY REFERENCES workspaces(id),
  computed_at timestamptz NOT NULL,
  -- The graph the pass saw (community nodes and MEMBER_OF edges not counted).
  node_count integer NOT NULL,
  edge_count integer NOT NULL,
  community_count integer NOT NULL,
  modularity double precision NOT NULL
);
`);
    await q.query(workspaceRlsSql('community_passes'));
  }

  async down(q: QueryRunner): Promise<void> {
    await q.query(dropWorkspaceRlsSql('community_passes'));
    await q.query(`DROP TABLE community_passes`);
  }
}
