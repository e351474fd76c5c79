import { defineWorkflow } from '../platform/temporal/contract';

export interface RunFlowInput {
  workspaceId: string;
  executionId: string;
}

/**
 * The timer of a run held by its flow (issue 43 item 2, `flow.ts`): sleeps until the run's start time
 * (which a debounce's later dispatches push out), then releases the due runs of its key. Started by
 * the `run.flow_held` event; a second start while it runs answers the running one.
 */
export const runFlowWorkflow = defineWorkflow<[RunFlowInput], void>({
  type: 'runFlowWorkflow',
  id: (input) => `run-flow-${input.executionId}`,
  workspaceId: (input) => input.workspaceId,
  summary: (input) => `Flow timer of run ${input.executionId}`,
});
