import type { EntityManager } from 'typeorm';
import { queryRows } from '../platform/db/query';
import type { ValidationIssue } from '../platform/errors';
import { ConflictError, ValidationFailedError } from '../platform/errors';
import { LIMITS } from '../rules/limits';
import { GENESIS_HASH, stepEntry } from './audit';
import * as auditRepo from './audit-repository';
import type { RerunRequest } from './control-schemas';
import type { RunExecution, RunStep } from './entities';
import { FINISHED_STATUSES } from './entities';
import * as executionRepo from './execution-repository';
import type { PlaybookStep, RunTemplate } from './schemas';
import * as stepRepo from './step-repository';

/**
 * Re-runs from a step (issue 26 part 5): `POST /v1/runs/{id}/rerun` makes a new run with `rerun_of`,
 * whose steps before `from_step` are copies of the earlier run's (their recorded status, output and
 * error, `reused_from_step_id`, no charge), so no tool is called and nothing is charged for them.
 * - A playbook rerun plans the earlier steps again: those from `from_step` on run with the inputs they
 *   ran with, or those `input_overrides` gives; the workflow never sees the copies (`beginRun` plans
 *   only the rest).
 * - An llm rerun is time travel: the model is asked again from `from_step`, with the copies as the
 *   tool results it has seen so far (they count against `max_steps`), and chooses its next steps
 *   afresh; so there are no later inputs to override. A step the model was answered with a refusal
 *   (`invalid_tool_call`, `blocked_by_policy`, `reviewer_responded`) is reused as that answer.
 * The new chain's link 0 is a RERUN link naming the earlier chain's head hash at that moment; the
 * copies' links follow.
 */
const issue = (loc: (string | number)[], msg: string, type: string): ValidationIssue => ({ loc, msg, type });

export interface RerunPlan {
  template: RunTemplate;
  fromStep: number;
  /** The earlier run's steps the rerun copies (those before `fromStep`). */
  reused: RunStep[];
  headHash: string;
}

/** Refusals an llm run's model received as a tool's result and planned on from: reusable as such. */
const FED_BACK = new Set(['invalid_tool_call', 'blocked_by_policy', 'reviewer_responded']);
const reusable = (agent: RunExecution['agent'], step: RunStep) =>
  step.status === 'SUCCEEDED' || (agent === 'llm' && FED_BACK.has(step.error?.code ?? ''));

/**
 * Checks the request against the earlier run and answers what to dispatch: 409 while that run is
 * unfinished; 422 for a `from_step` out of range, after a step that cannot be reused, or leaving an
 * llm run no model call, and for an override of a reused or unknown step (or any, for an llm run).
 * A playbook's overridden inputs are checked by the caller's tool schemas (`stepIssuesAt`), with
 * their loc under `input_overrides`.
 */
export async function planRerun(m: EntityManager, earlier: RunExecution, body: RerunRequest): Promise<RerunPlan> {
  if (!FINISHED_STATUSES.includes(earlier.status)) {
    throw new ConflictError({
      error: 'run_unfinished',
      status: earlier.status,
      message: 'Only a run that has finished can be re-run',
    });
  }
  const llm = earlier.agent === 'llm';
  const steps = (await stepRepo.stepsOf(m, earlier.id)).filter((step) => step.kind === 'TOOL');
  // A playbook's tool steps are numbered 0..n-1 at dispatch; an llm run's may leave gaps where the
  // agent recorded decisions, so its range ends one past its last tool step.
  const end = llm ? (steps.at(-1)?.stepNo ?? -1) + 1 : steps.length;
  const firstUnreusable = steps.find((step) => !reusable(earlier.agent, step))?.stepNo;
  const fromStep = body.from_step ?? firstUnreusable ?? 0;
  const reused = steps.filter((step) => step.stepNo < fromStep);
  const issues: ValidationIssue[] = [];
  if (fromStep > end || (!llm && fromStep === end)) {
    const last = llm ? `its last tool step is ${end - 1}, so from_step is at most ${end}` : `${end} steps (0-based)`;
    issues.push(issue(['body', 'from_step'], `The run has ${last}`, 'out_of_range'));
  } else if (firstUnreusable !== undefined && firstUnreusable < fromStep) {
    const msg = `Step ${firstUnreusable} did not succeed, so its output cannot be reused; rerun from it or earlier`;
    issues.push(issue(['body', 'from_step'], msg, 'step_not_reusable'));
  } else if (llm && reused.length >= Number(earlier.input.max_steps ?? LIMITS.runs.llm.defaultMaxSteps)) {
    const msg = `Reusing ${reused.length} steps leaves the model no call within the run's max_steps`;
    issues.push(issue(['body', 'from_step'], msg, 'out_of_range'));
  }
  for (const key of Object.keys(body.input_overrides ?? {})) {
    const stepNo = Number(key);
    const at = ['body', 'input_overrides', key];
    if (llm) issues.push(issue(at, "An llm run's steps after from_step are chosen by the model again", 'step_chosen'));
    else if (stepNo >= steps.length) issues.push(issue(at, 'No such step', 'unknown_step'));
    else if (stepNo < fromStep) issues.push(issue(at, 'A reused step keeps its input', 'step_reused'));
  }
  if (issues.length > 0) throw new ValidationFailedError(issues);

  await executionRepo.lockExecution(m, earlier.id);
  const head = (await auditRepo.auditOf(m, earlier.id)).at(-1);
  const concurrency =
    earlier.concurrencyKey && earlier.concurrencyLimit && earlier.concurrencyPolicy
      ? { key: earlier.concurrencyKey, limit: earlier.concurrencyLimit, policy: earlier.concurrencyPolicy }
      : undefined;
  const control = {
    ...(earlier.tags.length ? { tags: earlier.tags } : {}),
    ...(concurrency ? { concurrency } : {}),
    flow: { priority: earlier.priority },
    // The budget as it last stood (a reviewer's raises included); the reused steps never ran, so cost nothing.
    ...(earlier.budget ? { budget: earlier.budget } : {}),
  };
  const planned: PlaybookStep[] = steps.map((step) => ({
    tool: step.tool,
    input: body.input_overrides?.[String(step.stepNo)] ?? step.input,
    requires_approval: step.requiresApproval,
  }));
  return {
    template: llm
      ? ({ agent: 'llm', input: earlier.input, ...control } as RunTemplate)
      : // The earlier run's other input (its params, a trigger's event) stays, for the steps' `$from` values.
        ({ agent: 'playbook', input: { ...earlier.input, steps: planned }, ...control } as RunTemplate),
    fromStep,
    reused,
    headHash: head?.hash ?? GENESIS_HASH,
  };
}

/** What a RERUN link covers, recomputed from the rerun's row. */
export const rerunEntry = (run: Pick<RunExecution, 'id' | 'rerunOf' | 'rerunOfHeadHash' | 'rerunFromStep'>) => ({
  kind: 'RERUN',
  execution_id: run.id,
  rerun_of: run.rerunOf,
  rerun_of_head_hash: run.rerunOfHeadHash,
  from_step: run.rerunFromStep,
});

/**
 * Writes the lineage into a freshly dispatched rerun (in its dispatch's transaction): its columns,
 * the copied steps, and the chain's first links (RERUN, then one per copy).
 */
export async function recordRerun(
  m: EntityManager,
  rerun: { workspaceId: string; executionId: string },
  plan: RerunPlan & { earlierId: string },
): Promise<void> {
  const { workspaceId, executionId } = rerun;
  await queryRows(
    m,
    `UPDATE run_executions SET rerun_of = $2, rerun_of_head_hash = $3, rerun_from_step = $4 WHERE id = $1`,
    [executionId, plan.earlierId, plan.headHash, plan.fromStep],
  );
  // A playbook's steps were planned at dispatch, so the copies fill its first rows; an llm run's rows
  // are its copies, renumbered from 0 (the earlier run's decisions are not copied).
  await queryRows(
    m,
    plan.template.agent === 'playbook'
      ? `UPDATE run_steps n SET status = 'SUCCEEDED', output = o.output, credits_charged = 0,
           started_at = o.started_at, finished_at = o.finished_at, reused_from_step_id = o.id
         FROM run_steps o
         WHERE n.execution_id = $1 AND o.execution_id = $2 AND o.kind = 'TOOL' AND n.step_no = o.step_no
           AND o.step_no < $3`
      : `INSERT INTO run_steps (workspace_id, execution_id, step_no, kind, tool, input, requires_approval,
           status, output, error, credits_charged, policy_decision, started_at, finished_at, reused_from_step_id)
         SELECT workspace_id, $1, (row_number() OVER (ORDER BY step_no))::int - 1, 'TOOL', tool, input,
           requires_approval, status, output, error, 0, policy_decision, started_at, finished_at, id
         FROM run_steps WHERE execution_id = $2 AND kind = 'TOOL' AND step_no < $3`,
    [executionId, plan.earlierId, plan.fromStep],
  );
  const row = await executionRepo.mustFindExecution(m, executionId);
  await auditRepo.appendAudit(m, {
    workspaceId,
    executionId,
    kind: 'RERUN',
    refId: executionId,
    entry: rerunEntry(row),
  });
  for (const step of (await stepRepo.stepsOf(m, executionId)).filter((s) => s.reusedFromStepId)) {
    await auditRepo.appendAuditLocked(m, {
      workspaceId,
      executionId,
      kind: 'TOOL',
      refId: step.id,
      entry: stepEntry(step),
    });
  }
}
