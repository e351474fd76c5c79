import type { MigrationInterface, QueryRunner } from 'typeorm';

const PAIR = 'workspace_id, LEAST(survivor_node_id, duplicate_node_id), GREATEST(survivor_node_id, duplicate_node_id)';

/**
 * Merges that can be undone (issue 31, part 3). A merge now records what it changed in its
 * action's `details` (merge_actions, already under forced RLS); an undone merge leaves its
 * candidate `unmerged`, with the evidence the pair had then (`unmerged_evidence`), and its action
 * history gains an `unmerged` row. The one-candidate-per-pair index skips unmerged candidates, so
 * the resolver may propose the pair again once its evidence differs (src/merges/service.ts).
 */
export class MergeUndo1763780013200 implements MigrationInterface {
  name = 'MergeUndo1763780013200';

  async up(q: QueryRunner): Promise<void> {
    await q.query(`
ALTER TABLE merge_candidates DROP CONSTRAINT merge_candidates_status_check;
ALTER TABLE merge_candidates ADD CONSTRAINT merge_candidates_status_check
  CHECK (status IN ('pending', 'applied', 'rejected', 'superseded', 'unmerged'));
-- What matched when the merge was undone: reasons, score and the matching keys (person-rules.ts pairEvidence).
ALTER TABLE merge_candidates ADD COLUMN unmerged_evidence jsonb;
DROP INDEX merge_candidates_pair_idx;
CREATE UNIQUE INDEX merge_candidates_pair_idx ON merge_candidates (${PAIR}) WHERE status <> 'unmerged';
CREATE INDEX merge_candidates_unmerged_pair_idx ON merge_candidates (${PAIR}, updated_at DESC)
  WHERE status = 'unmerged';
-- The console's list of applied (and other resolved) candidates, latest first.
CREATE INDEX merge_candidates_resolved_idx ON merge_candidates (workspace_id, status, resolved_at DESC, id DESC)
  WHERE status <> 'pending';

ALTER TABLE merge_actions DROP CONSTRAINT merge_actions_action_check;
ALTER TABLE merge_actions ADD CONSTRAINT merge_actions_action_check
  CHECK (action IN ('merged', 'rejected', 'unmerged'));
-- A candidate is decided once and undone at most once.
ALTER TABLE merge_actions DROP CONSTRAINT merge_actions_workspace_id_candidate_id_key;
ALTER TABLE merge_actions ADD CONSTRAINT merge_actions_candidate_action_key UNIQUE (workspace_id, candidate_id, action);
`);
  }

  async down(q: QueryRunner): Promise<void> {
    await q.query(`
DELETE FROM merge_actions WHERE action = 'unmerged';
ALTER TABLE merge_actions DROP CONSTRAINT merge_actions_candidate_action_key;
ALTER TABLE merge_actions ADD CONSTRAINT merge_actions_workspace_id_candidate_id_key
  UNIQUE (workspace_id, candidate_id);
ALTER TABLE merge_actions DROP CONSTRAINT merge_actions_action_check;
ALTER TABLE merge_actions ADD CONSTRAINT merge_actions_action_check CHECK (action IN ('merged', 'rejected'));
DROP INDEX merge_candidates_resolved_idx, merge_candidates_unmerged_pair_idx, merge_candidates_pair_idx;
UPDATE merge_candidates SET status = 'superseded' WHERE status = 'unmerged';
CREATE UNIQUE INDEX merge_candidates_pair_idx ON merge_candidates (${PAIR});
ALTER TABLE merge_candidates DROP COLUMN unmerged_evidence;
ALTER TABLE merge_candidates DROP CONSTRAINT merge_candidates_status_check;
ALTER TABLE merge_candidates ADD CONSTRAINT merge_candidates_status_check
  CHECK (status IN ('pending', 'applied', 'rejected', 'superseded'));
`);
  }
}
