import { defineWorkflow } from '../platform/temporal/contract';
import type { Intent } from './model/contract';
import type { SealedText } from './sealed';
import type { PersistedGraph } from './service';

export interface PromptWorkflowInput {
  workspaceId: string;
  tenantId: string;
  correlationId: string;
  /** Sealed by the API: Temporal's history never holds the raw prompt. */
  prompt: SealedText;
  sourceHash: string;
  promptKind: string;
  forceIntent?: Intent;
  /** Wall-clock start at the API, for the audit row's end-to-end duration. */
  startedAtMs: number;
}

export interface PromptWorkflowResult extends PersistedGraph {
  correlation_id: string;
  intent: Intent;
  answer: string | null;
  citations: string[];
  credit_receipt: { ledger_id: string; kind: string; amount: number };
}

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
});

export const promptWorkflowId = (correlationId: string) => `prompt-${correlationId}`;
