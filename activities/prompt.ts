import type { SealBinding, SealedText } from '../src/platform/crypto/sealer';
import type { GroundedAnswer, Intent, RefinedGraph } from '../src/prompt/model/contract';
import type { PromptService } from '../src/prompt/service';
import type { CompletionInput, FailureInput } from '../src/prompt/settlement';
import type { PersistedGraph, PromptActor } from '../src/prompt/writes';
import { heartbeating } from './failures';

/** The prompt saga's steps: thin adapters over the prompt service. */
export function createPromptActivities(deps: { prompts: PromptService }) {
  const { prompts } = deps;
  return {
    classifyPrompt: (input: SealBinding & { prompt: SealedText }) =>
      heartbeating(() => prompts.classify(input.prompt, input)),

    refinePrompt: (input: SealBinding & { prompt: SealedText; promptKind: string }): Promise<RefinedGraph> =>
      heartbeating(() => prompts.refine(input.prompt, input.promptKind, input)),

    answerPrompt: (input: SealBinding & { prompt: SealedText }): Promise<GroundedAnswer> =>
      heartbeating(() => prompts.answer(input)),

    /**
     * Keyed by the workflow, so a retried reservation charges once. The workspace's own tenant
     * pays: the input names no tenant, so a forged workflow start cannot charge someone else.
     */
    reservePromptCredits: (input: {
      workspaceId: string;
      correlationId: string;
      intent: Intent;
      idempotencyKey: string;
    }) => prompts.reserve(input),

    refundPromptCredits: (input: { workspaceId: string; ledgerId: string }) => prompts.refund(input),

    persistPromptGraph: (input: {
      workspaceId: string;
      correlationId: string;
      refined: RefinedGraph;
      actor?: PromptActor;
      stage?: boolean;
    }): Promise<PersistedGraph> => prompts.persist(input),

    undoPromptWrites: (input: { workspaceId: string; correlationId: string }) => prompts.undo(input),

    completePromptRun: (input: CompletionInput) => prompts.complete(input),

    failPromptRun: (input: FailureInput) => prompts.fail(input),
  };
}
