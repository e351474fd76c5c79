import type { EntityManager } from 'typeorm';
import type { BudgetLimit, BudgetLimits, BudgetSpent } from '../approvals/schemas';
import { affectedRows, queryFirst } from '../platform/db/query';
import { CAPABILITY_CREDIT_KINDS, creditCost } from '../rules/costs';
import { RUN_TREE_SQL } from './children';
import type { RunExecution, RunStep } from './entities';

// Issue 40 item 4: a run's budget, what it has spent, and whether its next step fits. The budget
// approval a step that does not fit waits on is `budget-approvals.ts`.

/**
 * The runs whose spend counts against a run's budget (`$1`: the run): the run and its descendants, the
 * runs its steps started through `runs.dispatch` (children.ts), theirs, and so on.
 */
export const BUDGET_RUNS_SQL = `${RUN_TREE_SQL} SELECT id FROM tree`;

/**
 * What the run has spent: credits its steps were charged, the tool steps it started (a rerun's reused
 * steps never ran), and the wall time since its first step started until it finished (or now), on the database's clock.
 */
export async function spentBy(m: EntityManager, executionId: string): Promise<BudgetSpent> {
  const row = await queryFirst<BudgetSpent>(
    m,
    `SELECT coalesce(sum(s.credits_charged), 0)::int AS credits,
       (count(*) FILTER (WHERE s.kind = 'TOOL' AND s.started_at IS NOT NULL AND s.reused_from_step_id IS NULL))::int
         AS steps,
       coalesce(floor(extract(epoch FROM
         coalesce((SELECT finished_at FROM run_executions WHERE id = $1), clock_timestamp())
           - min(s.started_at))), 0)::int
         AS duration_seconds
     FROM run_steps s WHERE s.execution_id IN (${BUDGET_RUNS_SQL})`,
    [executionId],
  );
  return row ?? { credits: 0, steps: 0, duration_seconds: 0 };
}

/** The credits a step of `tool` is charged: its price in `rules/costs.ts`, 0 for a free tool. */
export const stepCredits = (tool: string): number => {
  const kind = CAPABILITY_CREDIT_KINDS[tool];
  return kind ? creditCost(kind) : 0;
};

/** The limits a next step of `stepCredits` credits would exceed, given what was spent. */
export function exceededLimits(budget: BudgetLimits, spent: BudgetSpent, credits: number): BudgetLimit[] {
  const exceeded: BudgetLimit[] = [];
  if (budget.max_credits !== undefined && spent.credits + credits > budget.max_credits) exceeded.push('max_credits');
  if (budget.max_steps !== undefined && spent.steps + 1 > budget.max_steps) exceeded.push('max_steps');
  if (budget.max_duration_seconds !== undefined && spent.duration_seconds >= budget.max_duration_seconds) {
    exceeded.push('max_duration_seconds');
  }
  return exceeded;
}

/** What a step that does not fit asks for. */
export interface BudgetOverrun {
  budget: BudgetLimits;
  spent: BudgetSpent;
  stepCredits: number;
  exceeded: BudgetLimit[];
}

/**
 * Whether the run's next step fits its budget: null when it does, when the run has none, or when a
 * reviewer approved this step over the budget already (it runs whatever the clock says meanwhile).
 */
export async function overrunOf(
  m: EntityManager,
  run: Pick<RunExecution, 'id' | 'budget'>,
  step: Pick<RunStep, 'stepNo' | 'tool'>,
): Promise<BudgetOverrun | null> {
  if (!run.budget) return null;
  const spent = await spentBy(m, run.id);
  const credits = stepCredits(step.tool);
  const exceeded = exceededLimits(run.budget, spent, credits);
  if (exceeded.length === 0) return null;
  const approved = await queryFirst(
    m,
    `SELECT 1 FROM run_budget_approvals WHERE execution_id = $1 AND step_no = $2 AND status = 'approved'`,
    [run.id, step.stepNo],
  );
  return approved ? null : { budget: run.budget, spent, stepCredits: credits, exceeded };
}

/**
 * A child run's budget (issue 40 item 4): what is left of its parent's (the parent's spend counts its
 * other descendants too), or the child's own where that is less. A parent without a budget passes none on.
 */
export async function inheritedBudget(
  m: EntityManager,
  parentId: string,
  own: BudgetLimits | undefined,
): Promise<BudgetLimits | undefined> {
  const parent = await queryFirst<{ budget: BudgetLimits | null }>(
    m,
    `SELECT budget FROM run_executions WHERE id = $1`,
    [parentId],
  );
  if (!parent?.budget) return own;
  const spent = await spentBy(m, parentId);
  const left: Record<BudgetLimit, [number | undefined, number]> = {
    max_credits: [parent.budget.max_credits, spent.credits],
    max_steps: [parent.budget.max_steps, spent.steps],
    max_duration_seconds: [parent.budget.max_duration_seconds, spent.duration_seconds],
  };
  const budget: BudgetLimits = { ...own };
  for (const [limit, [max, used]] of Object.entries(left) as [BudgetLimit, [number | undefined, number]][]) {
    if (max === undefined) continue;
    const rest = Math.max(max - used, 0);
    budget[limit] = Math.min(rest, own?.[limit] ?? rest);
  }
  return budget;
}

/** Stores a dispatch's budget on its run. */
export const recordBudget = (m: EntityManager, executionId: string, budget: BudgetLimits | undefined) =>
  budget
    ? affectedRows(m, `UPDATE run_executions SET budget = $2 WHERE id = $1`, [executionId, JSON.stringify(budget)])
    : 0;
