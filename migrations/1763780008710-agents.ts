import type { MigrationInterface, QueryRunner } from 'typeorm';
import { workspaceRlsSql } from './rls';

/**
 * Agent coordination (knowledge-graph-service-api.md §2.10 and §3): task sessions with a heartbeat,
 * claims on nodes of the contains hierarchy, and clusters of failed sessions by normalised error
 * signature. Findings are graph nodes (`agent.finding`) and need no table.
 */
export class Agents1763780008710 implements MigrationInterface {
  name = 'Agents1763780008710';

  async up(q: QueryRunner): Promise<void> {
    await q.query(`
CREATE TABLE agent_sessions (
  id uuid PRIMARY KEY DEFAULT gen_random_uuid(),
  workspace_id uuid NOT NULL REFERENCES workspaces(id),
  user_id uuid NOT NULL REFERENCES users(id),
  name text,
  metadata jsonb NOT NULL DEFAULT '{}',
  status text NOT NULL DEFAULT 'active' CHECK (status IN ('active', 'ended', 'expired')),
  outcome text CHECK (outcome IN ('succeeded', 'failed', 'cancelled')),
  error_signature text,
  started_at timestamptz NOT NULL DEFAULT now(),
  last_heartbeat_at timestamptz NOT NULL DEFAULT now(),
  ended_at timestamptz,
  -- Set once the failure-cluster workflow has counted this session: redelivery counts it once.
  clustered_at timestamptz,
  UNIQUE (workspace_id, id),
  CHECK ((status = 'active') = (ended_at IS NULL))
);
-- The sweeper's question: which active sessions missed their heartbeat.
CREATE INDEX agent_sessions_heartbeat_idx ON agent_sessions (last_heartbeat_at) WHERE status = 'active';

CREATE TABLE agent_claims (
  id uuid PRIMARY KEY DEFAULT gen_random_uuid(),
  workspace_id uuid NOT NULL REFERENCES workspaces(id),
  session_id uuid NOT NULL,
  user_id uuid NOT NULL REFERENCES users(id),
  target_node_id uuid NOT NULL,
  intent text NOT NULL,
  status text NOT NULL DEFAULT 'active' CHECK (status IN ('active', 'released', 'abandoned')),
  created_at timestamptz NOT NULL DEFAULT now(),
  updated_at timestamptz NOT NULL DEFAULT now(),
  closed_at timestamptz,
  FOREIGN KEY (workspace_id, session_id) REFERENCES agent_sessions (workspace_id, id),
  FOREIGN KEY (workspace_id, target_node_id) REFERENCES nodes (workspace_id, id)
);
-- Contract 4.2: at most one active claim per target, whatever the code above it does.
CREATE UNIQUE INDEX agent_claims_one_active_idx ON agent_claims (workspace_id, target_node_id) WHERE status = 'active';
CREATE INDEX agent_claims_session_idx ON agent_claims (workspace_id, session_id) WHERE status = 'active';
CREATE INDEX agent_claims_recent_idx ON agent_claims (workspace_id, created_at DESC, id) WHERE status = 'active';

CREATE TABLE agent_failure_clusters (
  id uuid PRIMARY KEY DEFAULT gen_random_uuid(),
  workspace_id uuid NOT NULL REFERENCES workspaces(id),
  signature_hash char(64) NOT NULL,
  -- The normalised signature (src/agents/signature.ts); the raw one stays on its session.
  signature text NOT NULL,
  count integer NOT NULL DEFAULT 0,
  first_seen timestamptz NOT NULL,
  last_seen timestamptz NOT NULL,
  -- The last five sessions that joined, newest first.
  recent_session_ids uuid[] NOT NULL DEFAULT '{}',
  UNIQUE (workspace_id, signature_hash)
);
CREATE INDEX agent_failure_clusters_count_idx ON agent_failure_clusters (workspace_id, count DESC, last_seen DESC);

-- The sweeper visits only workspaces with an overdue session; this definer function (owned by
-- the migration role, which bypasses RLS) tells which, and nothing else.
CREATE FUNCTION weft_stale_session_workspaces(ttl interval) RETURNS SETOF uuid
  LANGUAGE sql STABLE SECURITY DEFINER SET search_path = public
  AS $$ SELECT DISTINCT workspace_id FROM agent_sessions WHERE status = 'active' AND last_heartbeat_at < now() - ttl $$;
`);
    for (const table of ['agent_sessions', 'agent_claims', 'agent_failure_clusters']) {
      await q.query(workspaceRlsSql(table));
    }
  }

  async down(q: QueryRunner): Promise<void> {
    await q.query(`
DROP FUNCTION IF EXISTS weft_stale_session_workspaces(interval);
DROP TABLE IF EXISTS agent_failure_clusters, agent_claims, agent_sessions;
`);
  }
}
