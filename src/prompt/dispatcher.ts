import { WorkflowFailedError } from '@temporalio/client';
import { TerminatedFailure } from '@temporalio/common';
import type { z } from 'zod';
import { CREDIT_COSTS } from '../credits/costs';
import { InsufficientCreditsError } from '../credits/errors';
import { readCreditBalance } from '../credits/repository';
import type { Principal } from '../platform/auth/principal';
import type { UnitOfWork } from '../platform/db/unit-of-work';
import { ConflictError, InternalError } from '../platform/errors';
import type { TemporalHandle } from '../platform/temporal/connection';
import { findFailureDetails, toDomainError } from '../platform/temporal/failures';
import { WORKSPACE_ID_ATTRIBUTE } from '../platform/temporal/search-attributes';
import type { Intent } from './model/contract';
import { PROMPT_CREDIT_KIND } from './model/contract';
import type { PromptRequest } from './schemas';
import type { Sealer } from './sealed';
import type { PromptService } from './service';
import { sourceHash } from './summary';
import type { PromptWorkflowResult } from './workflow';
import { promptWorkflow } from './workflow';

/** The cheapest price the prompt may cost: the forced intent's, else the query's (the least). */
function minimumCost(forceIntent?: Intent) {
  const kind = PROMPT_CREDIT_KIND[forceIntent ?? 'query'];
  return { kind, cost: CREDIT_COSTS[kind] };
}

/**
 * Runs a prompt as the `prompt-<correlation_id>` workflow and waits for its result. A repeated
 * correlation id attaches to the first execution (running or finished) instead of running twice.
 */
export function createPromptApi(deps: {
  uow: UnitOfWork;
  temporal: TemporalHandle;
  sealer: Sealer;
  prompts: PromptService;
}) {
  const { uow, temporal, sealer, prompts } = deps;

  const start = (
    principal: Principal,
    body: z.output<typeof PromptRequest>,
    correlationId: string,
    startedAtMs: number,
  ) =>
    temporal.workflows.start(promptWorkflow, {
      workspaceId: principal.workspaceId,
      tenantId: principal.tenantId,
      correlationId,
      prompt: sealer.seal(body.prompt, { workspaceId: principal.workspaceId, correlationId }),
      sourceHash: sourceHash(body.prompt),
      promptKind: body.prompt_kind,
      forceIntent: body.force_intent,
      startedAtMs,
    });

  return {
    async run(
      principal: Principal,
      body: z.output<typeof PromptRequest>,
      correlationId: string,
    ): Promise<PromptWorkflowResult> {
      const startedAtMs = Date.now();
      // Contract 7: the credit check comes before any model call, and classification is one.
      const { kind, cost } = minimumCost(body.force_intent);
      const balance = await uow({ workspaceId: principal.workspaceId }, (m) =>
        readCreditBalance(m, principal.tenantId),
      );
      if (balance.locked || balance.balance < cost) {
        const refusal = new InsufficientCreditsError({
          error: 'insufficient_credits',
          required: cost,
          available: balance.locked ? 0 : balance.balance,
          kind,
        });
        // Every call gets its audit row, a refused one too.
        await prompts.fail({
          workspaceId: principal.workspaceId,
          correlationId,
          promptKind: body.prompt_kind,
          sourceHash: sourceHash(body.prompt),
          intent: body.force_intent ?? 'query',
          startedAtMs,
          errorCode: refusal.constructor.name,
          ledgerId: null,
        });
        throw refusal;
      }
      const handle = await start(principal, body, correlationId, startedAtMs);
      // A correlation id is the client's to choose: never hand one workspace another's execution.
      const description = await handle.describe();
      if (description.typedSearchAttributes.get(WORKSPACE_ID_ATTRIBUTE) !== principal.workspaceId) {
        throw new ConflictError('This correlation id belongs to another execution');
      }
      try {
        return await handle.result();
      } catch (error) {
        const failure = findFailureDetails(error);
        if (failure) throw toDomainError(failure);
        if (error instanceof WorkflowFailedError && error.cause instanceof TerminatedFailure) {
          // No compensation runs for a terminated execution; the reconcile schedule settles it.
          throw new InternalError('The prompt execution was terminated; its credits are settled shortly');
        }
        throw error;
      }
    },
  };
}

export type PromptApi = ReturnType<typeof createPromptApi>;
