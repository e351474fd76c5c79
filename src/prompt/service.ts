// The prompt workflow's activities call this service; each step's transaction body lives beside its
// kind: the writes and their compensation (writes.ts), staging (staging.ts), the audit rows (settlement.ts).

import { findChangeSetOfPrompt } from '../change-sets/repository';
import type { CreditReceipt } from '../credits/repository';
import { refundCredits, reserveCredits } from '../credits/repository';
import type { SealBinding, SealedText, Sealer } from '../platform/crypto/sealer';
import type { UnitOfWork } from '../platform/db/unit-of-work';
import { InternalError, NotFoundError } from '../platform/errors';
import type { OutboxRelay } from '../platform/outbox/relay';
import type { PromptRun } from './entities';
import type { GroundedAnswer, Intent, PromptModel, RefinedGraph } from './model/contract';
import { PROMPT_CREDIT_KIND } from './model/contract';
import type { PromptRunClaim } from './repository';
import { claimPromptRun, findPromptRun, findPromptWrites, linkReservation, tenantOfWorkspace } from './repository';
import type { Retrieval } from './retrieval';
import type { CompletionInput, FailureInput } from './settlement';
import { recordFailure, settleAbandoned, settleCompleted } from './settlement';
import { stageRefined } from './staging';
import type { PromptWorkflowResult } from './workflow';
import type { PersistedGraph, PromptActor } from './writes';
import { loadWritten, promptScope, undoWrites, writeRefined } from './writes';

/**
 * The prompt pipeline's domain steps. Each is safe to repeat: Temporal runs activities at least
 * once, so writes are keyed by the prompt's correlation id.
 */
export function createPromptService(deps: {
  uow: UnitOfWork;
  outbox: OutboxRelay;
  model: PromptModel;
  sealer: Sealer;
  retrieval: Retrieval;
}) {
  const { uow, outbox, model, sealer, retrieval } = deps;

  return {
    classify: (prompt: SealedText, binding: SealBinding) => model.classify(sealer.open(prompt, binding)),

    refine: (prompt: SealedText, promptKind: string, binding: SealBinding) =>
      model.refine(sealer.open(prompt, binding), promptKind),

    /**
     * Persists the refined graph in one transaction (writes.ts), or stages it as a change-set when asked
     * (staging.ts). Exactly once per correlation id: a repeat returns what the first run wrote.
     */
    persist(input: {
      workspaceId: string;
      correlationId: string;
      refined: RefinedGraph;
      /** Who sent the prompt, for the graph's version rows (absent in workflows started before issue 31). */
      actor?: PromptActor;
      /** Stage a change-set instead of writing (issue 31 part 4); exactly once per correlation id too. */
      stage?: boolean;
    }): Promise<PersistedGraph> {
      const { workspaceId, correlationId, refined, actor } = input;
      return uow(promptScope(workspaceId, correlationId, actor), (m) =>
        input.stage && actor
          ? stageRefined(m, workspaceId, correlationId, refined, actor)
          : writeRefined(m, workspaceId, correlationId, refined),
      );
    },

    /**
     * The compensation of `persist`, in its own transaction. Idempotent, and a no-op when nothing
     * was persisted.
     */
    undo: (input: { workspaceId: string; correlationId: string }) =>
      uow(promptScope(input.workspaceId, input.correlationId), async (m) => ({
        undone: await undoWrites(m, input.correlationId),
      })),

    /** Hybrid retrieval, then a grounded answer whose citations are node ids of this context. */
    async answer(input: SealBinding & { prompt: SealedText }): Promise<GroundedAnswer> {
      const question = sealer.open(input.prompt, input);
      const context = await retrieval.context(input.workspaceId, question, await retrieval.embed(question));
      return groundedAnswer(await model.answer(question, context), context.nodes);
    },

    /**
     * Claims the correlation id for this request before anything runs; when it is taken, the run
     * that holds it (a retry of the same request, or another request under a reused id).
     */
    claim: (claim: PromptRunClaim) =>
      uow(
        { workspaceId: claim.workspaceId },
        async (m): Promise<{ claimed: true } | { claimed: false; run: PromptRun }> => {
          if (await claimPromptRun(m, claim)) return { claimed: true };
          const run = await findPromptRun(m, claim.workspaceId, claim.correlationId);
          if (!run) throw new InternalError('The prompt run holding this correlation id vanished');
          return { claimed: false, run };
        },
      ),

    /**
     * Reserves the intent's cost, keyed by `idempotencyKey` so a retried step charges once. The
     * tenant that pays is the workspace's own, read here: never one named by the caller.
     */
    reserve: (input: { workspaceId: string; correlationId: string; intent: Intent; idempotencyKey: string }) =>
      uow({ workspaceId: input.workspaceId }, async (m): Promise<CreditReceipt> => {
        const tenantId = await tenantOfWorkspace(m, input.workspaceId);
        if (!tenantId) throw new NotFoundError('Workspace not found');
        const receipt = await reserveCredits(m, {
          tenantId,
          workspaceId: input.workspaceId,
          kind: PROMPT_CREDIT_KIND[input.intent],
          idempotencyKey: input.idempotencyKey,
        });
        await linkReservation(m, input.correlationId, receipt.ledger_id);
        return receipt;
      }),

    refund: (input: { workspaceId: string; ledgerId: string }) =>
      uow({ workspaceId: input.workspaceId }, (m) => refundCredits(m, { ledgerId: input.ledgerId })),

    /**
     * What a completed run answered, rebuilt from its audit row and the graph, for a replay after
     * Temporal's retention has dropped the execution's own result: the same nodes, edges, answer
     * and receipt, the nodes and edges as they are now.
     */
    replay: (run: PromptRun): Promise<PromptWorkflowResult> =>
      uow({ workspaceId: run.workspaceId }, async (m) => {
        const writes = await findPromptWrites(m, run.workspaceId, run.correlationId);
        if (!run.linkedCreditLedgerId) throw new InternalError('This prompt run has no reservation to show');
        const written = writes ? await loadWritten(m, writes.nodeIds, writes.edgeIds) : { nodes: [], edges: [] };
        const staged = await findChangeSetOfPrompt(m, run.correlationId);
        return {
          ...(staged ? { change_set_id: staged.id } : {}),
          correlation_id: run.correlationId,
          intent: run.intent,
          ...written,
          nodes_created: run.nodeCount,
          edges_created: run.edgeCount,
          answer: run.answer,
          citations: run.citations ?? [],
          credit_receipt: {
            ledger_id: run.linkedCreditLedgerId,
            kind: PROMPT_CREDIT_KIND[run.intent],
            amount: run.creditsUsed,
          },
        };
      }),

    /** Settles a run as done (settlement.ts), then kicks the outbox for the nodes it created. */
    async complete(input: CompletionInput): Promise<{ recorded: boolean }> {
      const { recorded, emitted } = await uow({ workspaceId: input.workspaceId }, (m) => settleCompleted(m, input));
      if (emitted > 0) outbox.kick(input.workspaceId);
      return { recorded };
    },

    /** The failure audit row: counts 0, credits 0 after the refund, the error's class name. */
    fail: (input: FailureInput) =>
      uow({ workspaceId: input.workspaceId }, async (m) => ({ recorded: await recordFailure(m, input) })),

    /**
     * Does what a run's compensation would have done, in one transaction under the reservation's
     * lock: undo its writes, refund, audit the failure. For runs that ended without compensating
     * (a terminated workflow, a stream whose process died). Does nothing to a run that completed
     * meanwhile; idempotent otherwise.
     */
    abandon: (input: FailureInput) => uow({ workspaceId: input.workspaceId }, (m) => settleAbandoned(m, input)),

    /** The query pipeline's parts, for the stream endpoint, which reports each step as it runs. */
    retrieval,
    model,
  };
}

/** Keeps only citations of the retrieved context, once each. */
export function groundedAnswer(raw: GroundedAnswer, context: readonly { id: string }[]): GroundedAnswer {
  const known = new Set(context.map((node) => node.id));
  return { answer: raw.answer, citations: [...new Set(raw.citations.filter((id) => known.has(id)))] };
}

export type PromptService = ReturnType<typeof createPromptService>;
