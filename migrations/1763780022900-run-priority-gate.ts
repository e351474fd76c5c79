import type { MigrationInterface, QueryRunner } from 'typeorm';

/**
 * Issue 43 item 2, priority within the workspace (`src/runs/priority-gate.ts`): a run the gate holds
 * back is QUEUED with `flow_hold = 'priority'` and its start in `held_start`, as a throttled run
 * waits. Two partial indexes keep the gate cheap: a workspace's runs released to Temporal but not yet
 * begun (QUEUED, nothing held back), which it counts, and its held runs in release order.
 */
export class RunPriorityGate1763780022900 implements MigrationInterface {
  name = 'RunPriorityGate1763780022900';

  async up(q: QueryRunner): Promise<void> {
    await q.query(`
ALTER TABLE run_executions DROP CONSTRAINT IF EXISTS run_executions_flow_hold_check;
ALTER TABLE run_executions ADD CONSTRAINT run_executions_flow_hold_check
  CHECK (flow_hold IN ('throttle', 'debounce', 'priority'));
CREATE INDEX run_executions_in_flight_idx ON run_executions (workspace_id)
  WHERE status = 'QUEUED' AND held_start IS NULL;
CREATE INDEX run_executions_gate_idx ON run_executions (workspace_id, priority, dispatch_seq)
  WHERE status = 'QUEUED' AND flow_hold = 'priority';
`);
  }

  async down(q: QueryRunner): Promise<void> {
    await q.query(`
DROP INDEX IF EXISTS run_executions_gate_idx;
DROP INDEX IF EXISTS run_executions_in_flight_idx;
-- A held run then looks like one whose start was lost, which the run reconciler starts (its rows older than its age).
UPDATE run_executions SET held_start = NULL, flow_hold = NULL WHERE flow_hold = 'priority';
ALTER TABLE run_executions DROP CONSTRAINT IF EXISTS run_executions_flow_hold_check;
ALTER TABLE run_executions ADD CONSTRAINT run_executions_flow_hold_check CHECK (flow_hold IN ('throttle', 'debounce'));
`);
  }
}
