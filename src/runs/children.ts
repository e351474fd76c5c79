// Child runs (issue 40 item 2): a run a step started through `runs.dispatch` names its parent and
// its tree's root, nests at most LIMITS.runs.maxDepth below that root, and is cancelled (with its own
// children) when its parent is.
import type { EntityManager } from 'typeorm';
import { queryRows } from '../platform/db/query';
import { ConflictError, ValidationFailedError } from '../platform/errors';
import { LIMITS } from '../rules/limits';
import { FINISHED_STATUSES } from './entities';
import type { NewExecution } from './execution-repository';
import * as executionRepo from './execution-repository';

export type RunLineage = NonNullable<NewExecution['lineage']>;

/**
 * What a run started by a step of `parentId` records: that parent, the parent's root (or the parent,
 * when it is a root) and one level more than the parent. 422 `run_depth_exceeded` beyond the limit;
 * 404 for a parent the caller's workspace does not hold; 409 `run_finished` for one that has ended.
 * The parent's row is locked first, as its cancel locks it: a cancel either commits before (and the
 * dispatch is refused) or waits for the child, which it then finds and cancels.
 */
export async function childLineage(m: EntityManager, parentId: string): Promise<RunLineage> {
  await executionRepo.lockExecution(m, parentId);
  const parent = await executionRepo.mustFindExecution(m, parentId);
  if (FINISHED_STATUSES.includes(parent.status)) {
    throw new ConflictError({ error: 'run_finished', status: parent.status, message: 'The parent run has finished' });
  }
  const depth = parent.depth + 1;
  if (depth > LIMITS.runs.maxDepth) {
    throw new ValidationFailedError([
      {
        loc: ['body'],
        msg:
          `Runs started by runs' steps nest at most ${LIMITS.runs.maxDepth} levels below their root run; ` +
          `this one would be level ${depth} below ${parent.rootExecutionId ?? parent.id}`,
        type: 'run_depth_exceeded',
      },
    ]);
  }
  return { parentId: parent.id, rootId: parent.rootExecutionId ?? parent.id, depth };
}

/**
 * The run `$1` (level 0) and every run below it (children, theirs, …, each one level more), as `tree
 * (id, status, level)`: the one walk of a run's descendants, for its cancel and its budget's spend.
 */
export const RUN_TREE_SQL = `WITH RECURSIVE tree (id, status, level) AS (
    SELECT id, status, 0 FROM run_executions WHERE id = $1::uuid
    UNION ALL
    SELECT e.id, e.status, t.level + 1 FROM run_executions e JOIN tree t ON e.parent_execution_id = t.id
    WHERE t.level < ${LIMITS.runs.maxDepth}
  )`;

/**
 * Every unfinished run below `executionId` (children, theirs, …), parents before their children.
 * A finished child's own children are found too: a child that ended leaves its runs behind.
 */
export const unfinishedDescendants = (m: EntityManager, executionId: string) =>
  queryRows<{ id: string }>(
    m,
    `${RUN_TREE_SQL}
     SELECT id FROM tree WHERE level > 0 AND status NOT IN ('SUCCEEDED', 'FAILED', 'CANCELLED') ORDER BY level`,
    [executionId],
  ).then((rows) => rows.map((row) => row.id));

/**
 * Cancels the unfinished runs below a cancelled run in the cancel's transaction, each as a cancel of
 * its own would (`cancelOne`); answers those whose workflow must be woken. One that finished since the
 * read (409 from `cancelOne`) is left as it ended.
 */
export async function cancelDescendants(
  m: EntityManager,
  executionId: string,
  cancelOne: (m: EntityManager, id: string) => Promise<{ started: boolean }>,
): Promise<string[]> {
  const woken: string[] = [];
  for (const id of await unfinishedDescendants(m, executionId)) {
    try {
      if ((await cancelOne(m, id)).started) woken.push(id);
    } catch (error) {
      if (!(error instanceof ConflictError)) throw error;
    }
  }
  return woken;
}
