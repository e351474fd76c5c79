import type { MigrationInterface, QueryRunner } from 'typeorm';
import { dropWorkspaceRlsSql, workspaceRlsSql } from './rls';

/**
 * Review NL-6: a forced community pass (`POST /v1/ontology/communities/refresh {"force":true}`) is
 * charged and has a per-workspace cooldown (LIMITS.communities.forcedCooldownSeconds). This table
 * remembers when each workspace last asked for one; the claim is one upsert that only moves the
 * time once the cooldown is over, so two concurrent requests cannot both pass. Forced RLS like
 * every workspace table.
 */
export class CommunityForcedRefreshes1763780016100 implements MigrationInterface {
  name = 'CommunityForcedRefreshes1763780016100';

  async up(q: QueryRunner): Promise<void> {
    await q.query(`
CREATE TABLE community_forced_refreshes (
  workspace_id uuid PRIMARY KEY REFERENCES workspaces(id),
  requested_at timestamptz NOT NULL
);
`);
    await q.query(workspaceRlsSql('community_forced_refreshes'));
  }

  async down(q: QueryRunner): Promise<void> {
    await q.query(dropWorkspaceRlsSql('community_forced_refreshes'));
    await q.query(`DROP TABLE community_forced_refreshes`);
  }
}
