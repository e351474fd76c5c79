import type { MigrationInterface, QueryRunner } from 'typeorm';

/**
 * Prompt runs that always settle (issue 10, items 8–12):
 * - a run row is claimed (`running`) before anything runs, holding the SHA-256 of the request, so a
 *   correlation id names one request for good, also after Temporal's retention has dropped it;
 * - a settled run keeps what a replay needs beyond the graph: the answer and its citations, or the
 *   domain failure (never the prompt: the nodes and edges are read back from the graph);
 * - `prompt_writes.created_references` is each created node's reference count as the prompt left
 *   it, so the compensation can tell a node others have referenced since.
 */
export class PromptSettlement1763780008100 implements MigrationInterface {
  name = 'PromptSettlement1763780008100';

  async up(q: QueryRunner): Promise<void> {
    await q.query(`
ALTER TABLE prompt_runs DROP CONSTRAINT prompt_runs_status_check;
ALTER TABLE prompt_runs ADD CONSTRAINT prompt_runs_status_check CHECK (status IN ('running', 'ok', 'error'));
ALTER TABLE prompt_runs
  ADD COLUMN request_hash char(64),
  ADD COLUMN answer text,
  ADD COLUMN citations uuid[],
  ADD COLUMN failure jsonb;
-- The reconcile pass looks for claims whose execution ended without closing them.
CREATE INDEX prompt_runs_running_idx ON prompt_runs (workspace_id, created_at) WHERE status = 'running';
ALTER TABLE prompt_writes ADD COLUMN created_references jsonb NOT NULL DEFAULT '{}';`);
  }

  async down(q: QueryRunner): Promise<void> {
    await q.query(`
ALTER TABLE prompt_writes DROP COLUMN created_references;
DROP INDEX prompt_runs_running_idx;
UPDATE prompt_runs SET status = 'error', error_code = coalesce(error_code, 'Unfinished') WHERE status = 'running';
ALTER TABLE prompt_runs DROP COLUMN request_hash, DROP COLUMN answer, DROP COLUMN citations, DROP COLUMN failure;
ALTER TABLE prompt_runs DROP CONSTRAINT prompt_runs_status_check;
ALTER TABLE prompt_runs ADD CONSTRAINT prompt_runs_status_check CHECK (status IN ('ok', 'error'));`);
  }
}
