import { z } from 'zod';
import { NodeResponse, NodeTypeFilter } from '../graph/schemas';
import { LIMITS } from '../rules/limits';

const query = z.string().trim().min(1).max(LIMITS.search.queryLength);
const topK = z.number().int().min(1).max(LIMITS.search.maxTopK);
const Filters = z
  .strictObject({
    type: z
      .array(NodeTypeFilter)
      .max(LIMITS.search.maxTypeFilters)
      .optional()
      .describe('Only nodes of these types; empty means all.'),
  })
  .meta({ id: 'SearchFilters' });

/**
 * knowledge-graph-service-api.md §4.1: POST /v1/ontology/search. Omitted mode and top_k come from the workspace
 * settings.
 */
export const HybridSearchRequest = z
  .strictObject({
    q: query,
    top_k: topK.optional().describe('Defaults to the workspace’s default_top_k.'),
    mode: z
      .enum(['vector', 'structural', 'keyword', 'hybrid'])
      .optional()
      .describe('Defaults to the workspace’s retrieval_mode.'),
    filters: Filters.optional(),
  })
  .meta({ id: 'HybridSearchRequest' });
export type HybridSearchRequest = z.infer<typeof HybridSearchRequest>;
export type SearchMode = NonNullable<HybridSearchRequest['mode']>;

export const CreditReceipt = z
  .object({ ledger_id: z.uuid(), kind: z.string(), amount: z.number().int().describe('Credits charged.') })
  .meta({ id: 'CreditReceipt' });

export const ScoreComponents = z
  .object({
    vector_score: z.number().describe('Rank-derived score in [0, 1]; 0 when the node was not a vector candidate.'),
    structural_score: z
      .number()
      .describe('0.5 × recency (7-day half-life) + 0.5 × importance_score; 0 when not a structural candidate.'),
    importance_multiplier: z.number().describe('importance_score in hybrid mode with importance_ranking, else 1.'),
    similarity: z.number().nullable().describe('Cosine similarity to the query, when the node was a vector candidate.'),
    keyword_score: z
      .number()
      .describe(
        'Rank-derived score in [0, 1] of the keyword (full-text) match; 0 when not a keyword candidate, and ' +
          'always 0 in hybrid mode when the workspace’s keyword_weight is 0 (no keyword search runs).',
      ),
  })
  .describe(
    'score = (vector_weight × vector_score + structural_weight × structural_score + keyword_weight × keyword_score) ' +
      '× importance_multiplier, with the weights of the query plan.',
  )
  .meta({ id: 'ScoreComponents' });

const candidateCount = z.number().int().nullable();

export const QueryPlan = z
  .object({
    mode: z.enum(['vector', 'structural', 'keyword', 'hybrid']),
    top_k: z.number().int(),
    filters: z.object({ type: z.array(z.string()) }),
    vector_weight: z.number(),
    structural_weight: z.number(),
    keyword_weight: z.number().describe('Hybrid: the workspace’s keyword_weight (default 0). Keyword mode: 1.'),
    importance_ranking: z.boolean(),
    result_count: z.number().int(),
    min_similarity_threshold: z.number(),
    candidates: z
      .object({ vector: candidateCount, structural: candidateCount, keyword: candidateCount })
      .describe('How many candidates each search found; null for a search that did not run.'),
  })
  .meta({ id: 'QueryPlan' });

export const HybridSearchResponse = z
  .object({
    results: z.array(z.object({ node: NodeResponse, score: z.number(), components: ScoreComponents })),
    mode: z.enum(['vector', 'structural', 'keyword', 'hybrid']),
    query_plan: QueryPlan,
    credit_receipt: CreditReceipt,
  })
  .meta({ id: 'HybridSearchResponse' });
export type HybridSearchResponse = z.input<typeof HybridSearchResponse>;

/** knowledge-graph-service-api.md §4.1: POST /v1/ontology/nodes/search. */
export const NodeSearchRequest = z
  .strictObject({
    q: query,
    top_k: topK.optional().describe('Defaults to the workspace’s default_top_k.'),
    mode: z.enum(['semantic', 'keyword', 'hybrid']).default('hybrid'),
    filters: Filters.optional(),
  })
  .meta({ id: 'NodeSearchRequest' });
export type NodeSearchRequest = z.infer<typeof NodeSearchRequest>;

export const NodeSearchResponse = z.array(NodeResponse);
