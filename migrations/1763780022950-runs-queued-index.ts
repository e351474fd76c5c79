import type { MigrationInterface, QueryRunner } from 'typeorm';

/**
 * Issue 43 item 1: a dispatch counts its workspace's runs still waiting to start (QUEUED), to weigh its
 * run's share of the task queue (`src/runs/fair-share.ts`). A partial index keeps that count to the
 * workspace's waiting runs, a few index entries, in the dispatch's own INSERT.
 */
export class RunsQueuedIndex1763780022950 implements MigrationInterface {
  name = 'RunsQueuedIndex1763780022950';

  async up(q: QueryRunner): Promise<void> {
    await q.query(`CREATE INDEX run_executions_queued_idx ON run_executions (workspace_id) WHERE status = 'QUEUED'`);
  }

  async down(q: QueryRunner): Promise<void> {
    await q.query(`DROP INDEX IF EXISTS run_executions_queued_idx`);
  }
}
