import type { WorkflowHandle } from '@temporalio/client';
import { WorkflowFailedError, WorkflowNotFoundError } from '@temporalio/client';
import { CancelledFailure, TerminatedFailure, TimeoutFailure } from '@temporalio/common';
import type { z } from 'zod';
import { InsufficientCreditsError } from '../credits/errors';
import { readCreditBalance } from '../credits/repository';
import { readOntologyConfig } from '../ontology-config/service';
import type { Principal } from '../platform/auth/principal';
import type { Sealer } from '../platform/crypto/sealer';
import type { UnitOfWork } from '../platform/db/unit-of-work';
import { ConflictError, DeadlineExceededError, InternalError, UnavailableError } from '../platform/errors';
import type { TemporalHandle } from '../platform/temporal/connection';
import type { WorkflowFunction } from '../platform/temporal/contract';
import { detailsOf, toDomainError } from '../platform/temporal/failures';
import { WORKSPACE_ID_ATTRIBUTE } from '../platform/temporal/search-attributes';
import { CREDIT_COSTS } from '../rules/costs';
import type { PromptRun } from './entities';
import type { Intent } from './model/contract';
import { PROMPT_CREDIT_KIND } from './model/contract';
import type { PromptRequest } from './schemas';
import { StoredFailure } from './schemas';
import type { PromptService } from './service';
import type { AuditInput } from './settlement';
import { requestHash, sourceHash } from './summary';
import type { PromptWorkflowResult } from './workflow';
import { promptWorkflow, promptWorkflowId } from './workflow';

/** The cheapest price the prompt may cost: the forced intent's, else the query's (the least). */
function minimumCost(forceIntent?: Intent) {
  const kind = PROMPT_CREDIT_KIND[forceIntent ?? 'query'];
  return { kind, cost: CREDIT_COSTS[kind] };
}

/** 409: the correlation id is another request's (a tool keying its prompt by its own key says so its way). */
export class CorrelationIdReusedError extends ConflictError {
  constructor() {
    super('This correlation id was already used for another request');
  }
}

/**
 * Another request under a used correlation id is a 409, whatever became of the first; and a run
 * that failed answers its failure again. Read from the run row, so both hold after Temporal's
 * retention has dropped the execution.
 */
function refuseReuse(run: PromptRun, hash: string): void {
  // Rows from before request hashes were kept match any request.
  if (run.requestHash !== null && run.requestHash !== hash) {
    throw new CorrelationIdReusedError();
  }
  if (run.status === 'error' && run.failure !== null) {
    const stored = StoredFailure.safeParse(run.failure);
    throw stored.success ? toDomainError(stored.data) : new InternalError();
  }
}

/**
 * Runs a prompt as the `prompt-<correlation_id>` workflow and waits for its result, at most
 * `deadlineMs`. The correlation id is claimed for this request first (with the request's hash): a
 * retry of the same request attaches to its run or replays its outcome; another request under the
 * same id is a 409.
 */
export function createPromptApi(deps: {
  uow: UnitOfWork;
  temporal: TemporalHandle;
  sealer: Sealer;
  prompts: PromptService;
  /** How long a request waits for its prompt; past it the answer is 504 and the prompt runs on. */
  deadlineMs: number;
}) {
  const { uow, temporal, sealer, prompts, deadlineMs } = deps;

  /** knowledge-graph-service-api.md §7: the credit check comes before any model call, and classification is one. */
  async function refuseWithoutCredits(principal: Principal, forceIntent: Intent | undefined, audit: AuditInput) {
    const { kind, cost } = minimumCost(forceIntent);
    const balance = await uow({ workspaceId: principal.workspaceId }, (m) => readCreditBalance(m, principal.tenantId));
    if (!balance.locked && balance.balance >= cost) return;
    const refusal = new InsufficientCreditsError({
      error: 'insufficient_credits',
      required: cost,
      available: balance.locked ? 0 : balance.balance,
      kind,
    });
    // Every call gets its audit row, a refused one too; it reserved nothing, so a retry may run.
    await prompts.fail({ ...audit, ledgerId: null, failure: detailsOf(refusal) });
    throw refusal;
  }

  async function resultWithin(
    handle: WorkflowHandle<WorkflowFunction<typeof promptWorkflow>>,
  ): Promise<PromptWorkflowResult> {
    try {
      return await temporal.workflows.resultWithin(
        handle,
        deadlineMs,
        () =>
          new DeadlineExceededError(
            'The prompt did not finish in time. It may still complete: ' +
              'retry with the same X-Correlation-Id for its result',
          ),
      );
    } catch (error) {
      if (error instanceof WorkflowFailedError) {
        // No compensation runs for a terminated or timed-out execution; the reconcile pass settles it.
        if (error.cause instanceof TerminatedFailure) {
          throw new InternalError('The prompt execution was terminated; its credits are settled shortly');
        }
        if (error.cause instanceof TimeoutFailure) {
          throw new DeadlineExceededError('The prompt ran past its execution timeout; its credits are settled shortly');
        }
        if (error.cause instanceof CancelledFailure) {
          throw new UnavailableError(
            'The prompt was cancelled: nothing it wrote remains and its credits were refunded',
          );
        }
      }
      throw error;
    }
  }

  /** A completed run's result: the execution's own while Temporal keeps it, else rebuilt. */
  async function replay(run: PromptRun): Promise<PromptWorkflowResult> {
    try {
      return await resultWithin(temporal.workflows.handle(promptWorkflow, promptWorkflowId(run.correlationId)));
    } catch (error) {
      if (error instanceof WorkflowNotFoundError) return prompts.replay(run);
      throw error;
    }
  }

  return {
    async run(
      principal: Principal,
      body: z.output<typeof PromptRequest>,
      correlationId: string,
    ): Promise<PromptWorkflowResult> {
      const { workspaceId } = principal;
      const hash = requestHash({
        endpoint: 'prompt',
        prompt: body.prompt,
        forceIntent: body.force_intent ?? null,
        promptKind: body.prompt_kind,
        // Only when asked: hashes of requests without the flag stay what they were.
        ...(body.stage ? { stage: true } : {}),
      });
      const audit: AuditInput = {
        workspaceId,
        correlationId,
        promptKind: body.prompt_kind,
        sourceHash: sourceHash(body.prompt),
        requestHash: hash,
        // The row needs an intent before classification: the forced one, else a query's.
        intent: body.force_intent ?? 'query',
        startedAtMs: Date.now(),
      };
      const claim = await prompts.claim({ ...audit, requestHash: hash });
      if (claim.claimed) {
        await refuseWithoutCredits(principal, body.force_intent, audit);
      } else {
        refuseReuse(claim.run, hash);
        if (claim.run.status === 'ok') return replay(claim.run);
      }
      // The workspace's setting stages every update prompt; a request may ask for it, never opt out.
      const stage =
        body.stage === true ||
        (await uow({ workspaceId }, async (m) => (await readOntologyConfig(m)).staging.update_prompts));
      const handle = await temporal.workflows.start(promptWorkflow, {
        workspaceId,
        correlationId,
        prompt: sealer.seal(body.prompt, { workspaceId, correlationId }),
        sourceHash: audit.sourceHash,
        requestHash: hash,
        promptKind: body.prompt_kind,
        forceIntent: body.force_intent,
        startedAtMs: audit.startedAtMs,
        actor: {
          userId: principal.userId,
          credentialKind: principal.credential.kind,
          ...(principal.credential.id ? { credentialId: principal.credential.id } : {}),
        },
        ...(stage ? { stage: true } : {}),
      });
      // A correlation id is the client's to choose: never hand one workspace another's execution.
      const description = await handle.describe();
      if (description.typedSearchAttributes.get(WORKSPACE_ID_ATTRIBUTE) !== workspaceId) {
        const conflict = new ConflictError('This correlation id belongs to another execution');
        if (claim.claimed) await prompts.fail({ ...audit, ledgerId: null, failure: detailsOf(conflict) });
        throw conflict;
      }
      return resultWithin(handle);
    },
  };
}

export type PromptApi = ReturnType<typeof createPromptApi>;
