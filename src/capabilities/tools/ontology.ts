import { createHash } from 'node:crypto';
import { z } from 'zod';
import { NodeResponse } from '../../graph/schemas';
import { ConflictError, DomainError } from '../../platform/errors';
import type { FailureDetails } from '../../platform/temporal/failures';
import { detailsOf } from '../../platform/temporal/failures';
import { PROMPT_MAX_CHARS } from '../../prompt/schemas';
import type { PromptService } from '../../prompt/service';
import { groundedAnswer } from '../../prompt/service';
import type { AuditInput } from '../../prompt/settlement';
import { sourceHash } from '../../prompt/summary';
import { LIMITS } from '../../rules/limits';
import type { SearchService } from '../../search/service';
import { searchSettings } from '../../search/service';
import type { CapabilityCall } from '../define';
import { defineCapability } from '../define';

// What a capability question leaves in the prompt-run audit (knowledge-graph-service-api.md §2.5's free-form family).
const ASK_PROMPT_KIND = 'ontology_ask';

/** The correlation id already names another run: its audit row is left alone. */
class CorrelationIdTaken extends ConflictError {
  constructor() {
    super('This correlation id was already used; a question is not replayed');
  }
}

const auditOf = (call: CapabilityCall, question: string): AuditInput & { requestHash: string; reclaim: boolean } => ({
  workspaceId: call.principal.workspaceId,
  correlationId: call.correlationId,
  promptKind: ASK_PROMPT_KIND,
  sourceHash: sourceHash(question),
  // Its own family of request hashes: a prompt or a stream under the same id is another request.
  requestHash: createHash('sha256')
    .update(JSON.stringify(['ontology.ask', question]), 'utf8')
    .digest('hex'),
  intent: 'query',
  startedAtMs: call.startedAtMs,
  reclaim: call.reclaimCorrelation ?? false,
});

const failureOf = (error: unknown): FailureDetails =>
  error instanceof DomainError
    ? detailsOf(error)
    : { code: 'internal', errorClass: error instanceof Error ? error.name : 'Error', detail: 'Internal server error' };

/**
 * `ontology.ask` and `ontology.search`: the graph through the capability surface. Both reuse their
 * features' services; their prices are in `src/rules/costs.ts` (charged by the capability layer).
 */
export const ontologyCapabilities = (deps: {
  prompts: Pick<PromptService, 'retrieval' | 'model' | 'claim' | 'complete' | 'fail'>;
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
    example: { question: 'Who works on the billing module?' },
    errors: {
      409: 'The `X-Correlation-Id` already names another prompt run (a question is never replayed)',
      502: 'The model provider failed; the charge is refunded',
    },
    // The query pipeline of a prompt, run in this process: retrieval and the model are the prompt
    // feature's own, and the call is audited like a query prompt (a running claim of the correlation
    // id, then ok or error with the credits; never the text).
    handler: async (call, { question }) => {
      const audit = auditOf(call, question);
      const claim = await deps.prompts.claim(audit);
      if (!claim.claimed) {
        // A run step's retry whose earlier attempt answered (the worker died before recording it).
        const earlier = claim.run;
        const same = audit.reclaim && earlier.status === 'ok' && earlier.requestHash === audit.requestHash;
        if (!same || earlier.answer === null) throw new CorrelationIdTaken();
        return { answer: earlier.answer, citations: earlier.citations ?? [], correlation_id: call.correlationId };
      }
      const { retrieval, model } = deps.prompts;
      const context = await retrieval.context(call.principal.workspaceId, question, await retrieval.embed(question));
      const answer = groundedAnswer(await model.answer(question, context), context.nodes);
      await deps.prompts.complete({
        ...audit,
        ledgerId: call.receipt!.ledger_id,
        creditsUsed: call.receipt!.amount,
        nodesCreated: 0,
        edgesCreated: 0,
        answer,
      });
      return { ...answer, correlation_id: call.correlationId };
    },
    onFailure: async (call, input, error) => {
      if (error instanceof CorrelationIdTaken) return;
      const audit = auditOf(call, input.question);
      // Refused before the handler (402): the refusal is audited under a claim of its own.
      if (!call.receipt && !(await deps.prompts.claim(audit)).claimed) return;
      await deps.prompts.fail({ ...audit, ledgerId: call.receipt?.ledger_id ?? null, failure: failureOf(error) });
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
    example: { query: 'billing retries', top_k: 5 },
    errors: { 502: 'The embedding provider failed; the charge is refunded' },
    prepare: searchSettings,
    // The search confirms the charge in its own read transaction (what POST /v1/ontology/search does).
    handler: async ({ principal, receipt, prepared, confirm }, input) => {
      const found = await deps.search.searchPrepaid(
        principal,
        { q: input.query, top_k: input.top_k },
        { receipt: receipt!, prepared: prepared!, confirm },
      );
      return { results: found.results.map(({ node, score }) => ({ node, score })) };
    },
  }),
];
