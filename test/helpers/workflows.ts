import type { WorkflowHandle } from '@temporalio/client';
import { WorkflowNotFoundError } from '@temporalio/client';
import { eventually } from './eventually';
import { getStack } from './stack';

/**
 * A workflow's description, or `undefined` while it has not started: workflows that the outbox (or
 * a dispatch's launch) starts after a commit may not exist yet, and `describe` then throws
 * WorkflowNotFoundError, which a probe of `eventually` reads as "not yet".
 */
export async function describeOnceStarted(handle: WorkflowHandle) {
  try {
    return await handle.describe();
  } catch (error) {
    if (error instanceof WorkflowNotFoundError) return undefined;
    throw error;
  }
}

/** Waits for the workflow `workflowId` to exist, and returns its description. */
export function startedWorkflow(workflowId: string) {
  const handle = getStack().runtime.temporal.client.workflow.getHandle(workflowId);
  return eventually(() => describeOnceStarted(handle), { what: `${workflowId} to start` });
}
