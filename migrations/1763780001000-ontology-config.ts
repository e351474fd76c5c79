import type { MigrationInterface, QueryRunner } from 'typeorm';
import { workspaceRlsSql } from './rls';

/**
 * Per-workspace ontology settings (knowledge-graph-service-api.md §2.7). Only overrides are stored; defaults live in
 * code.
 */
export class OntologyConfig1763780001000 implements MigrationInterface {
  name = 'OntologyConfig1763780001000';

  async up(q: QueryRunner): Promise<void> {
    await q.query(`
CREATE TABLE workspace_settings (
  workspace_id uuid PRIMARY KEY REFERENCES workspaces(id),
  search jsonb NOT NULL DEFAULT '{}',
  importance jsonb NOT NULL DEFAULT '{}',
  resolver jsonb NOT NULL DEFAULT '{}',
  updated_at timestamptz NOT NULL DEFAULT now()
);`);
    await q.query(workspaceRlsSql('workspace_settings'));
  }

  async down(q: QueryRunner): Promise<void> {
    await q.query(`DROP TABLE workspace_settings`);
  }
}
