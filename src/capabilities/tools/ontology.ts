import { z } from 'zod';
import { NodeResponse } from '../../graph/schemas';
import { LIMITS } from '../../limits';
import { readOntologyConfig } from '../../ontology-config/service';
import { PROMPT_MAX_CHARS } from '../../prompt/schemas';
import type { PromptService } from '../../prompt/service';
import { sourceHash } from '../../prompt/summary';
import type { SearchService } from '../../search/service';
import type { CapabilityCall } from '../define';
import { defineCapability } from '../define';

// What a capability question leaves in the prompt-run audit (contract 2.5's free-form family).
const ASK_PROMPT_KIND = 'ontology_ask';
const NOTHING_PERSISTED = { nodes: [], edges: [], nodes_created: 0, edges_created: 0 };

const auditOf = (call: CapabilityCall, question: string) => ({
  workspaceId: call.principal.workspaceId,
  correlationId: call.correlationId,
  promptKind: ASK_PROMPT_KIND,
  sourceHash: sourceHash(question),
  intent: 'query' as const,
  startedAtMs: call.startedAtMs,
});

/**
 * `ontology.ask` and `ontology.search`: the graph through the capability surface. Both reuse their
 * features' services; their prices are in `src/credits/costs.ts` (charged by the capability layer).
 */
export const ontologyCapabilities = (deps: {
  prompts: Pick<PromptService, 'retrieval' | 'model' | 'complete' | 'fail'>;
  search: Pick<SearchService, 'searchPrepaid'>;
}) => [
  defineCapability({
    name: 'ontology.ask',
    access: 'read',
    description:
      'A natural-language question over the workspace graph: hybrid retrieval, then a grounded answer citing node ids',
    input: z.strictObject({
      question: z
        .string()
        .max(PROMPT_MAX_CHARS)
        .refine((text) => text.trim().length > 0, 'The question is empty'),
    }),
    output: z.object({
      answer: z.string(),
      citations: z.array(z.uuid()).describe('Ids of the nodes of this workspace the answer rests on.'),
      correlation_id: z.uuid().describe('The prompt-run audit row of this question.'),
    }),
    // The query pipeline of a prompt, run in this process: retrieval and the model are the prompt
    // feature's own, and the call is audited as a query prompt (status, credits, never the text).
    handler: async (call, { question }) => {
      const { retrieval, model } = deps.prompts;
      const context = await retrieval.context(call.principal.workspaceId, question, await retrieval.embed(question));
      const raw = await model.answer(question, context);
      const known = new Set(context.nodes.map((node) => node.id));
      const answer = { answer: raw.answer, citations: [...new Set(raw.citations.filter((id) => known.has(id)))] };
      await deps.prompts.complete({
        ...auditOf(call, question),
        persisted: NOTHING_PERSISTED,
        answer,
        creditsUsed: call.receipt!.amount,
        ledgerId: call.receipt!.ledger_id,
      });
      return { ...answer, correlation_id: call.correlationId };
    },
    onFailure: async (call, input, error) => {
      await deps.prompts.fail({
        ...auditOf(call, input.question),
        errorCode: error instanceof Error ? error.constructor.name : 'Error',
        ledgerId: call.receipt?.ledger_id ?? null,
      });
    },
  }),
  defineCapability({
    name: 'ontology.search',
    access: 'read',
    description: 'Hybrid search over the workspace’s nodes (the mode and weights of the workspace settings)',
    input: z.strictObject({
      query: z.string().trim().min(1).max(LIMITS.search.queryLength),
      top_k: z
        .number()
        .int()
        .min(1)
        .max(LIMITS.search.maxTopK)
        .optional()
        .describe('Defaults to the workspace’s default_top_k.'),
    }),
    output: z.object({ results: z.array(z.object({ node: NodeResponse, score: z.number() })) }),
    prepare: async (m) => (await readOntologyConfig(m)).search,
    handler: async ({ principal, receipt, prepared }, input) => {
      const found = await deps.search.searchPrepaid(
        principal,
        { q: input.query, top_k: input.top_k },
        { receipt: receipt!, settings: prepared! },
      );
      return { results: found.results.map(({ node, score }) => ({ node, score })) };
    },
  }),
];
