import type { MigrationInterface, QueryRunner } from 'typeorm';
import { dropWorkspaceRlsSql, workspaceRlsSql } from './rls';

/**
 * Issue 41, a write tool of a connector is never called twice: each call is recorded (committed)
 * before it is sent, keyed by its idempotency key, and its outcome after. A retried activity that
 * finds the outcome answers it again; one that finds the call sent and no outcome (the worker died
 * mid-call) does not send it again. Rows past the replay window are deleted as new calls are made.
 */
export class ConnectorCalls1763780022500 implements MigrationInterface {
  name = 'ConnectorCalls1763780022500';

  async up(q: QueryRunner): Promise<void> {
    await q.query(`
CREATE TABLE connector_calls (
  workspace_id uuid NOT NULL REFERENCES workspaces(id),
  idempotency_key text NOT NULL,
  connector_id uuid NOT NULL REFERENCES connectors(id) ON DELETE CASCADE,
  tool text NOT NULL,
  sent_at timestamptz NOT NULL DEFAULT now(),
  finished_at timestamptz,
  -- {result} or {error: {error, message, status?}}, once finished.
  outcome jsonb,
  PRIMARY KEY (workspace_id, idempotency_key),
  CHECK ((finished_at IS NULL) = (outcome IS NULL))
);
CREATE INDEX connector_calls_sent ON connector_calls (workspace_id, sent_at);
`);
    await q.query(workspaceRlsSql('connector_calls'));
  }

  async down(q: QueryRunner): Promise<void> {
    await q.query(dropWorkspaceRlsSql('connector_calls'));
    await q.query('DROP TABLE connector_calls');
  }
}
