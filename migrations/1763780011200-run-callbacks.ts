import type { MigrationInterface, QueryRunner } from 'typeorm';
import { dropWorkspaceRlsSql, workspaceRlsSql } from './rls';

/**
 * Issue 26 part 2, signed completion callbacks: subscriptions (standing ones for every run of the
 * workspace, or one run's own from its dispatch), a delivery per (subscription, event) holding the
 * exact body it signs, and every attempt at it. `event_key` names the event (`run.finished:<run>`,
 * `approval.requested:<approval>`), so a retried writer enqueues it once per subscription.
 */
export class RunCallbacks1763780011200 implements MigrationInterface {
  name = 'RunCallbacks1763780011200';

  async up(q: QueryRunner): Promise<void> {
    await q.query(`
CREATE TABLE run_callback_subscriptions (
  id uuid PRIMARY KEY DEFAULT gen_random_uuid(),
  workspace_id uuid NOT NULL REFERENCES workspaces(id),
  -- A dispatch's own callback: that run only. NULL: a standing subscription for every run.
  execution_id uuid REFERENCES run_executions(id) ON DELETE CASCADE,
  url text NOT NULL CHECK (length(url) <= 2048),
  events text[] NOT NULL,
  -- AES-256-GCM under WEFT_ENCRYPTION_KEY, bound to the workspace and subscription id.
  secret_sealed text NOT NULL,
  -- Whom deliveries act as: checked before each attempt (a revoked credential stops delivering).
  principal jsonb NOT NULL,
  description text,
  created_by uuid NOT NULL REFERENCES users(id),
  created_at timestamptz NOT NULL DEFAULT now(),
  UNIQUE (workspace_id, id)
);
CREATE INDEX run_callback_subscriptions_standing_idx ON run_callback_subscriptions (workspace_id, created_at DESC)
  WHERE execution_id IS NULL;
CREATE INDEX run_callback_subscriptions_run_idx ON run_callback_subscriptions (execution_id)
  WHERE execution_id IS NOT NULL;

CREATE TABLE run_callback_deliveries (
  id uuid PRIMARY KEY DEFAULT gen_random_uuid(),
  workspace_id uuid NOT NULL REFERENCES workspaces(id),
  subscription_id uuid NOT NULL,
  execution_id uuid NOT NULL,
  event_id uuid NOT NULL,
  event_key text NOT NULL,
  event_type text NOT NULL,
  -- The exact bytes signed and sent on every attempt.
  body text NOT NULL,
  status text NOT NULL DEFAULT 'pending'
    CHECK (status IN ('pending', 'delivered', 'failed', 'stopped')),
  attempts integer NOT NULL DEFAULT 0,
  -- Bumped by a redelivery: names the delivery's next workflow.
  series integer NOT NULL DEFAULT 0,
  created_at timestamptz NOT NULL DEFAULT now(),
  -- When the current series began: its retries end 24 hours later.
  series_started_at timestamptz NOT NULL DEFAULT now(),
  last_attempt_at timestamptz,
  delivered_at timestamptz,
  UNIQUE (subscription_id, event_key),
  FOREIGN KEY (workspace_id, subscription_id) REFERENCES run_callback_subscriptions (workspace_id, id)
    ON DELETE CASCADE
);
CREATE INDEX run_callback_deliveries_recent_idx ON run_callback_deliveries (subscription_id, created_at DESC, id DESC);
CREATE INDEX run_callback_deliveries_run_idx ON run_callback_deliveries (execution_id, created_at DESC);

CREATE TABLE run_callback_attempts (
  id uuid PRIMARY KEY DEFAULT gen_random_uuid(),
  workspace_id uuid NOT NULL REFERENCES workspaces(id),
  delivery_id uuid NOT NULL REFERENCES run_callback_deliveries(id) ON DELETE CASCADE,
  attempt_no integer NOT NULL,
  started_at timestamptz NOT NULL,
  latency_ms integer,
  outcome text NOT NULL CHECK (outcome IN ('succeeded', 'failed', 'refused', 'credential_revoked')),
  response_code integer,
  response_body text,
  error text,
  UNIQUE (delivery_id, attempt_no)
);
`);
    for (const table of ['run_callback_subscriptions', 'run_callback_deliveries', 'run_callback_attempts']) {
      await q.query(workspaceRlsSql(table));
    }
  }

  async down(q: QueryRunner): Promise<void> {
    for (const table of ['run_callback_attempts', 'run_callback_deliveries', 'run_callback_subscriptions']) {
      await q.query(dropWorkspaceRlsSql(table));
      await q.query(`DROP TABLE ${table}`);
    }
  }
}
