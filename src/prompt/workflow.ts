import type { SealedText } from '../platform/crypto/sealer';
import { defineWorkflow } from '../platform/temporal/contract';
import type { SweepInput } from '../platform/temporal/sweeps';
import type { Intent } from './model/contract';
import type { PersistedGraph, PromptActor } from './writes';

/**
 * What starts a prompt. It names a workspace and no tenant: the activities read the paying tenant
 * from the workspace, so whoever can start a workflow still cannot charge another tenant.
 */
export interface PromptWorkflowInput {
  workspaceId: string;
  correlationId: string;
  /** Sealed by the API: Temporal's history never holds the raw prompt. */
  prompt: SealedText;
  sourceHash: string;
  /** SHA-256 of the request (prompt and options), recorded with the run. */
  requestHash: string;
  promptKind: string;
  forceIntent?: Intent;
  /** Wall-clock start at the API, for the audit row's end-to-end duration. */
  startedAtMs: number;
  /** Who sent it: the graph's version rows of its writes name them (issue 31). */
  actor?: PromptActor;
  /** Stage a change-set for review instead of writing (issue 31 part 4); decided at the API. */
  stage?: boolean;
}

export interface PromptWorkflowResult extends PersistedGraph {
  correlation_id: string;
  intent: Intent;
  answer: string | null;
  citations: string[];
  credit_receipt: { ledger_id: string; kind: string; amount: number };
}

/**
 * The longest a prompt may run, retries included. A run past it is closed by Temporal without
 * compensation, and the reconcile pass settles it (undo, refund, audit).
 */
export const PROMPT_EXECUTION_TIMEOUT = '10 minutes';

/**
 * `prompt-<correlation_id>`: a repeated correlation id attaches to the first execution, running or
 * finished, instead of running the prompt twice.
 */
export const promptWorkflow = defineWorkflow<[PromptWorkflowInput], PromptWorkflowResult>({
  type: 'promptWorkflow',
  id: (input) => promptWorkflowId(input.correlationId),
  workspaceId: (input) => input.workspaceId,
  idConflictPolicy: 'USE_EXISTING',
  idReusePolicy: 'REJECT_DUPLICATE',
  executionTimeout: PROMPT_EXECUTION_TIMEOUT,
});

export const promptWorkflowId = (correlationId: string) => `prompt-${correlationId}`;

/** Every ten minutes: settles the reservations of prompts that ended without compensation (`prompt-reconcile`). */
export const promptReconcileWorkflow = defineWorkflow<[SweepInput], unknown>({
  type: 'promptReconcileWorkflow',
  id: () => 'prompt-reconcile',
});
