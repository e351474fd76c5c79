import type { EntityManager } from 'typeorm';
import { queryRows } from '../platform/db/query';
import type { ValidationIssue } from '../platform/errors';
import { ConflictError, ValidationFailedError } from '../platform/errors';
import { GENESIS_HASH, stepEntry } from './audit';
import type { RerunRequest } from './control-schemas';
import type { RunExecution, RunStep } from './entities';
import { FINISHED_STATUSES } from './entities';
import * as repo from './repository';
import type { PlaybookStep, RunTemplate } from './schemas';

/**
 * Re-runs from a step (issue 26 part 5): `POST /v1/runs/{id}/rerun` makes a new playbook run with
 * `rerun_of`, whose steps before `from_step` are copies of the earlier run's (SUCCEEDED, their
 * recorded output, `reused_from_step_id`, no charge) and whose later steps run again with the
 * inputs they ran with, or those `input_overrides` gives. The workflow never sees the copies
 * (`beginRun` plans only the rest), so no tool is called and nothing is charged for them. The new
 * chain's link 0 is a RERUN link naming the earlier chain's head hash at that moment; the copies'
 * links follow. llm runs are refused (422): their steps were chosen by a model turn by turn, and a
 * model asked again after the reused steps may choose differently, so "the same run from step n"
 * would not be a promise we could keep.
 */

const issue = (loc: (string | number)[], msg: string, type: string): ValidationIssue => ({ loc, msg, type });

export interface RerunPlan {
  template: RunTemplate;
  fromStep: number;
  /** The earlier run's steps the rerun copies (those before `fromStep`). */
  reused: RunStep[];
  headHash: string;
}

/**
 * Checks the request against the earlier run and answers what to dispatch: 409 while that run is
 * unfinished, 422 for an llm run, a `from_step` out of range or after a step that did not succeed,
 * or an override of a reused or unknown step. Overridden inputs are checked by the caller's tool
 * schemas (`stepIssuesAt`), with their loc under `input_overrides`.
 */
export async function planRerun(m: EntityManager, earlier: RunExecution, body: RerunRequest): Promise<RerunPlan> {
  if (!FINISHED_STATUSES.includes(earlier.status)) {
    throw new ConflictError({
      error: 'run_unfinished',
      status: earlier.status,
      message: 'Only a run that has finished can be re-run',
    });
  }
  if (earlier.agent !== 'playbook') {
    throw new ValidationFailedError([
      issue(
        ['path', 'execution_id'],
        'Only playbook runs can be re-run; dispatch an llm run again',
        'rerun_unsupported',
      ),
    ]);
  }
  const steps = (await repo.stepsOf(m, earlier.id)).filter((step) => step.kind === 'TOOL');
  const firstUnsucceeded = steps.findIndex((step) => step.status !== 'SUCCEEDED');
  const fromStep = body.from_step ?? (firstUnsucceeded === -1 ? 0 : firstUnsucceeded);
  const issues: ValidationIssue[] = [];
  if (fromStep >= steps.length) {
    issues.push(issue(['body', 'from_step'], `The run has ${steps.length} steps (0-based)`, 'out_of_range'));
  } else if (firstUnsucceeded !== -1 && firstUnsucceeded < fromStep) {
    const msg = `Step ${firstUnsucceeded} did not succeed, so its output cannot be reused; rerun from it or earlier`;
    issues.push(issue(['body', 'from_step'], msg, 'step_not_reusable'));
  }
  for (const key of Object.keys(body.input_overrides ?? {})) {
    const stepNo = Number(key);
    if (stepNo >= steps.length) issues.push(issue(['body', 'input_overrides', key], 'No such step', 'unknown_step'));
    else if (stepNo < fromStep) {
      issues.push(issue(['body', 'input_overrides', key], 'A reused step keeps its input', 'step_reused'));
    }
  }
  if (issues.length > 0) throw new ValidationFailedError(issues);

  await repo.lockExecution(m, earlier.id);
  const head = (await repo.auditOf(m, earlier.id)).at(-1);
  const planned: PlaybookStep[] = steps.map((step) => ({
    tool: step.tool,
    input: body.input_overrides?.[String(step.stepNo)] ?? step.input,
    requires_approval: step.requiresApproval,
  }));
  const concurrency =
    earlier.concurrencyKey && earlier.concurrencyLimit && earlier.concurrencyPolicy
      ? { key: earlier.concurrencyKey, limit: earlier.concurrencyLimit, policy: earlier.concurrencyPolicy }
      : undefined;
  return {
    template: {
      agent: 'playbook',
      input: { steps: planned },
      ...(earlier.tags.length ? { tags: earlier.tags } : {}),
      ...(concurrency ? { concurrency } : {}),
    },
    fromStep,
    reused: steps.slice(0, fromStep),
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
  await queryRows(
    m,
    `UPDATE run_steps n SET status = 'SUCCEEDED', output = o.output, credits_charged = 0,
       started_at = o.started_at, finished_at = o.finished_at, reused_from_step_id = o.id
     FROM run_steps o
     WHERE n.execution_id = $1 AND o.execution_id = $2 AND o.kind = 'TOOL' AND n.step_no = o.step_no
       AND o.step_no < $3`,
    [executionId, plan.earlierId, plan.fromStep],
  );
  const row = await repo.mustFindExecution(m, executionId);
  await repo.appendAudit(m, { workspaceId, executionId, kind: 'RERUN', refId: executionId, entry: rerunEntry(row) });
  for (const step of (await repo.stepsOf(m, executionId)).filter((s) => s.reusedFromStepId)) {
    await repo.appendAuditLocked(m, { workspaceId, executionId, kind: 'TOOL', refId: step.id, entry: stepEntry(step) });
  }
}
