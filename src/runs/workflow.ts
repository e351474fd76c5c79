import { defineSignal } from '@temporalio/workflow';
import { defineWorkflow } from '../platform/temporal/contract';
import { TAGS_ATTRIBUTE } from '../platform/temporal/search-attributes';
import type { SweepInput } from '../platform/temporal/sweeps';

export const runWorkflowId = (executionId: string) => `run-${executionId}`;

export interface RunWorkflowInput {
  workspaceId: string;
  executionId: string;
  /** For the search attribute WeftAgent and the static summary. */
  agent: 'playbook' | 'llm';
  stepCount: number;
  /** An llm run's goal (its first 100 characters), for the summary. */
  goal?: string;
  /** The run's tags: the search attribute WeftTags, set in the start options (never upserted, so histories keep). */
  tags?: string[];
  /** Issue 43: its `flow.priority`; the workflow ignores it (Weft's gate orders by it, src/runs/priority-gate.ts). */
  priority?: number;
  /** Issue 43: its fairness weight (`fair-share.ts`), in the start options; the workflow ignores it. */
  weight?: number;
  /** How often a run waiting for approval re-reads its approval row (RUN_APPROVAL_RECHECK_SECONDS). */
  approvalRecheckSeconds?: number;
  /** Re-reads before a waiting run continues as new (RUN_APPROVAL_RECHECKS_PER_RUN). */
  approvalRechecksPerRun?: number;
  /**
   * A playbook's steps as dispatched (issue 27): the workflow starts on its first step and the step's
   * activity begins the run, so the run needs no `beginRun` of its own. Absent for llm runs, reruns,
   * runs the reconciler resumed, and in histories before it.
   */
  plan?: RunPlanStep[];
  /** Set by continue-as-new: the plan so far and the step whose approval the run waits on. */
  resume?: {
    plan: { maxSteps: number; steps: RunPlanStep[] };
    waiting: RunPlanStep;
    /** The index of the llm agent's model call that chose the waiting step (0 for a playbook). */
    llmCalls: number;
    /** The wait is for the step's budget approval (issue 40 item 4), not its own. */
    budget?: true;
    /** The step waits on its waitpoint (a wait tool's, issue 40 item 3), not on an approval. */
    held?: boolean;
  };
}

/** A step as the workflow drives it. */
export interface RunPlanStep {
  stepNo: number;
  tool: string;
  requiresApproval: boolean;
}

/** The llm agent's next move, as the planning activity recorded it. */
export type LlmMove =
  | { kind: 'step'; stepNo: number; tool: string; requiresApproval: boolean }
  | { kind: 'invalid' }
  | { kind: 'final'; answer: string };

export interface RunWorkflowResult {
  status: 'SUCCEEDED' | 'FAILED' | 'CANCELLED';
}

/**
 * One dispatched run (`run-<execution_id>`), started by the API right after the dispatch commits,
 * and from the `run.dispatched` outbox event of that transaction should the API not get to it. A
 * second start under the id (the event after the API's start, a redelivery) is refused and
 * answered with the first run's handle, even after it finished.
 */
export const runWorkflow = defineWorkflow<[RunWorkflowInput], RunWorkflowResult>({
  type: 'runWorkflow',
  id: (input) => runWorkflowId(input.executionId),
  workspaceId: (input) => input.workspaceId,
  fairnessWeight: (input) => input.weight,
  searchAttributes: (input) => (input.tags?.length ? [{ key: TAGS_ATTRIBUTE, value: input.tags }] : []),
  summary: (input) =>
    input.agent === 'llm'
      ? `llm run: ${input.goal ?? ''}`
      : `playbook run of ${input.stepCount} step${input.stepCount === 1 ? '' : 's'}`,
  idReusePolicy: 'REJECT_DUPLICATE',
});

/** An approval or a waitpoint of this run was settled (or the run was cancelled): re-read the rows now. */
export const runChangedSignal =
  defineSignal<[{ reason: 'approval_resolved' | 'cancelled' | 'waitpoint_completed' }]>('runChanged');

/** What one pass did; `running` rows were left to their live workflow. */
export interface RunReconcileResult {
  checked: number;
  running: number;
  resumed: number;
  settled: number;
  /** Rows a pass could not check or restart (Temporal unavailable, …); the next pass tries again. */
  failed: number;
  /** The execution ids resumed and settled, at most 100 of each, for the log and the operator. */
  resumedIds: string[];
  settledIds: string[];
}

/** Every five minutes: resumes or settles runs whose `run-<id>` closed or never started (issue 24; `run-reconcile`). */
export const runReconcileWorkflow = defineWorkflow<[SweepInput], RunReconcileResult>({
  type: 'runReconcileWorkflow',
  id: () => 'run-reconcile',
});
