import { refundCredits, reserveCredits } from '../src/credits/repository';
import type { UnitOfWork } from '../src/platform/db/unit-of-work';
import type { GroundedAnswer, Intent, RefinedGraph } from '../src/prompt/model/contract';
import { PROMPT_CREDIT_KIND } from '../src/prompt/model/contract';
import type { SealBinding, SealedText } from '../src/prompt/sealed';
import type { AuditInput, PersistedGraph, PromptService } from '../src/prompt/service';
import { classified, heartbeating } from './failures';

/** The prompt saga's steps: thin adapters over the prompt service and the credit ledger. */
export function createPromptActivities(deps: { prompts: PromptService; uow: UnitOfWork }) {
  const { prompts, uow } = deps;
  return {
    classifyPrompt: (input: SealBinding & { prompt: SealedText }) =>
      classified(() => heartbeating(() => prompts.classify(input.prompt, input))),

    refinePrompt: (input: SealBinding & { prompt: SealedText; promptKind: string }): Promise<RefinedGraph> =>
      classified(() => heartbeating(() => prompts.refine(input.prompt, input.promptKind, input))),

    answerPrompt: (input: SealBinding & { prompt: SealedText }): Promise<GroundedAnswer> =>
      classified(() => heartbeating(() => prompts.answer(input))),

    /** Keyed by the workflow, so a retried reservation charges once. */
    reservePromptCredits: (input: { tenantId: string; workspaceId: string; intent: Intent; idempotencyKey: string }) =>
      classified(() =>
        uow({ workspaceId: input.workspaceId }, (m) =>
          reserveCredits(m, {
            tenantId: input.tenantId,
            workspaceId: input.workspaceId,
            kind: PROMPT_CREDIT_KIND[input.intent],
            idempotencyKey: input.idempotencyKey,
          }),
        ),
      ),

    refundPromptCredits: (input: { workspaceId: string; ledgerId: string }) =>
      classified(() => uow({ workspaceId: input.workspaceId }, (m) => refundCredits(m, { ledgerId: input.ledgerId }))),

    persistPromptGraph: (input: {
      workspaceId: string;
      correlationId: string;
      refined: RefinedGraph;
    }): Promise<PersistedGraph> => classified(() => prompts.persist(input)),

    undoPromptWrites: (input: { workspaceId: string; correlationId: string }) => classified(() => prompts.undo(input)),

    completePromptRun: (
      input: AuditInput & {
        persisted: PersistedGraph;
        answer: GroundedAnswer | null;
        creditsUsed: number;
        ledgerId: string;
      },
    ) => classified(() => prompts.complete(input)),

    failPromptRun: (input: AuditInput & { errorCode: string; ledgerId: string | null }) =>
      classified(() => prompts.fail(input)),
  };
}
