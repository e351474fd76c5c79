import { DomainError } from '../src/platform/errors';
import type { RunError } from '../src/runs/entities';
import type { FlowReleaser } from '../src/runs/flow';
import type { RunFlowInput } from '../src/runs/flow-workflow';
import type { StepOptions } from '../src/runs/step-runner';
import type { RunSteps } from '../src/runs/steps';
import type { RunWorkflowInput } from '../src/runs/workflow';
import { heartbeating } from './failures';

type RunRef = Pick<RunWorkflowInput, 'workspaceId' | 'executionId'>;
type StepRef = RunRef & { stepNo: number };
/** A step's approval, or with `budget` its budget approval. */
type ApprovalRef = StepRef & { budget?: boolean };

/**
 * The run workflow's steps: thin adapters over the run step executor, each one transaction (or one
 * capability call) and safe to repeat. runStep turns a capability's refusal into a failed step
 * itself, so what reaches Temporal from it is transient and retried.
 */
export function createRunActivities(deps: { services: { runSteps: RunSteps; runFlow: FlowReleaser } }) {
  const { runSteps: runs, runFlow } = deps.services;
  return {
    /** Issue 43 item 2: a held run's timer releases its key's due runs; answers how long until its own start. */
    releaseFlowHeld: (input: RunFlowInput) => runFlow.release(input.workspaceId, input.executionId),
    beginRun: (input: RunRef) => runs.beginRun(input.workspaceId, input.executionId),
    decideStepPolicy: (input: StepRef) => runs.decidePolicy(input.workspaceId, input.executionId, input.stepNo),
    // `budget`: the step's budget approval (issue 40 item 4), waited on as a step's approval is.
    requestRunApproval: (input: ApprovalRef) =>
      input.budget
        ? runs.requestBudgetApproval(input.workspaceId, input.executionId, input.stepNo)
        : runs.requestApproval(input.workspaceId, input.executionId, input.stepNo),
    runApprovalState: (input: ApprovalRef) =>
      input.budget
        ? runs.budgetApprovalState(input.workspaceId, input.executionId, input.stepNo)
        : runs.approvalState(input.workspaceId, input.executionId, input.stepNo),
    /** Issue 32 part 3: the approval's deadline outcome once it is due (a budget approval has none). */
    expireRunApproval: (input: ApprovalRef) =>
      input.budget
        ? runs.budgetApprovalState(input.workspaceId, input.executionId, input.stepNo)
        : runs.expireApproval(input.workspaceId, input.executionId, input.stepNo),
    resumeRun: (input: RunRef) => runs.resume(input.workspaceId, input.executionId),
    /** Heartbeating: a worker killed mid-step is noticed within seconds and the step retried by its key. */
    runStep: async (input: StepRef & StepOptions) => {
      const { begin, decide, finish } = input;
      try {
        return await heartbeating(() =>
          runs.runStep(input.workspaceId, input.executionId, input.stepNo, { begin, decide, finish }),
        );
      } catch (error) {
        // Only transient refusals (unavailable, rate limited) get here: a plain error is retried.
        if (error instanceof DomainError) throw new Error(`${error.code}: ${error.message}`);
        throw error;
      }
    },
    /** Issue 40 item 3: a wait step's waitpoint as the run's wait reads it, expires it and settles it. */
    waitpointState: (input: StepRef) => runs.waitpointState(input),
    expireWaitpoint: (input: StepRef) => runs.expireWaitpoint(input),
    settleWaitStep: (input: StepRef & { finish?: boolean }) =>
      runs.settleWaitStep(
        { workspaceId: input.workspaceId, executionId: input.executionId, stepNo: input.stepNo },
        input.finish,
      ),
    /** The read and, once the wait is over, the step's settle in one transaction (no `settleWaitStep` after it). */
    readWaitStep: (input: StepRef & { finish?: boolean }) =>
      runs.readWaitStep(
        { workspaceId: input.workspaceId, executionId: input.executionId, stepNo: input.stepNo },
        input.finish,
      ),
    /** The llm agent's model call: heartbeating, so a worker lost mid-call is noticed within seconds. */
    planRunStep: (input: RunRef) => heartbeating(() => runs.planNext(input.workspaceId, input.executionId)),
    finishRun: (input: RunRef & { status: 'SUCCEEDED' | 'FAILED'; error: RunError | null; answer?: string }) =>
      runs.finishRun(input.workspaceId, input.executionId, input),
  };
}
