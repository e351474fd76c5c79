import type { WorkflowStartOptions } from '@temporalio/client';
import type { Duration, SearchAttributePair } from '@temporalio/common';

/**
 * What the domain knows of one workflow: its registered type, its meaningful and idempotent id,
 * the workspace it belongs to, and how a second start under the same id behaves. Declared once per
 * workflow beside its feature (`src/<feature>/workflow.ts`); `workflows/` implements it. Nothing
 * under `src/` imports `workflows/`: the function type below stands in for the implementation.
 */
export interface WorkflowContract<Args extends unknown[], Result> {
  /** The name the worker registers: the exported function's name in `workflows/`. */
  type: string;
  id(...args: Args): string;
  /** The workspace the run belongs to (its WeftWorkspaceId); system-wide jobs have none. */
  workspaceId?(...args: Args): string;
  /** Its fairness weight beside the workspace's fairness key (Temporal's default 1 when unset); inherited too. */
  fairnessWeight?(...args: Args): number | undefined;
  /** Search attributes the start sets beyond WeftKind and WeftWorkspaceId (a run's WeftTags). */
  searchAttributes?(...args: Args): SearchAttributePair[];
  /** What a start under a used id does (Temporal's default: refuse while running, allow after). */
  idReusePolicy?: WorkflowStartOptions['workflowIdReusePolicy'];
  idConflictPolicy?: WorkflowStartOptions['workflowIdConflictPolicy'];
  /** The execution's static summary in the Temporal UI (user metadata), so operators need not open payloads. */
  summary?(...args: Args): string;
  /** The longest a run may take, retries included; callers that wait get an answer by then. */
  executionTimeout?: Duration;
  /** Phantom: carries Result for the starter's types. */
  readonly __result?: Result;
}

/** The implementation's signature, for typed handles. */
export type WorkflowFunction<C> =
  C extends WorkflowContract<infer Args, infer Result> ? (...args: Args) => Promise<Result> : never;

export const defineWorkflow = <Args extends unknown[], Result>(
  contract: Omit<WorkflowContract<Args, Result>, '__result'>,
): WorkflowContract<Args, Result> => contract;
