import { defineRoute } from '../platform/api/route';
import { LIMITS } from '../rules/limits';
import { HybridSearchRequest, HybridSearchResponse, NodeSearchRequest, NodeSearchResponse } from './schemas';
import type { SearchService } from './service';

const tags = ['search'] as const;
const errors = { 502: 'The embedding provider failed; the charge is refunded' };

export const searchRoutes = (search: SearchService) => [
  defineRoute({
    method: 'post',
    path: '/v1/ontology/search',
    tags,
    scope: 'search:read',
    operationId: 'hybridSearch',
    summary: 'Vector, structural, keyword or hybrid search over the workspace’s nodes',
    description:
      'Vector (cosine similarity), structural (type filter, recency and importance), keyword (full text) or hybrid ' +
      'search. Hybrid scores vector_weight × vector_score + structural_weight × structural_score (+ keyword_weight ' +
      '× keyword_score, only when the workspace set a keyword_weight above 0), times importance_score with ' +
      'importance_ranking. Omitted `mode` and `top_k` come from the workspace settings; ' +
      `\`top_k\` at most ${LIMITS.search.maxTopK}, \`q\` at most ${LIMITS.search.queryLength} characters, at most ` +
      `${LIMITS.search.maxTypeFilters} type filters. Answers with scores, the query plan and a credit receipt.`,
    credits: ['ontology.search.hybrid'],
    body: HybridSearchRequest,
    example: {
      q: 'who founded the analytical engine company',
      top_k: 5,
      mode: 'hybrid',
      filters: { type: ['person'] },
    },
    response: HybridSearchResponse,
    errors,
    handler: ({ auth, body }) => search.search(auth, body),
  }),
  defineRoute({
    method: 'post',
    path: '/v1/ontology/nodes/search',
    tags,
    scope: 'search:read',
    operationId: 'searchNodes',
    summary: 'Semantic, keyword or hybrid node search',
    description:
      'Semantic (embedding), keyword (name) or hybrid (both, fused by reciprocal rank) search; answers with nodes. ' +
      `\`top_k\` at most ${LIMITS.search.maxTopK} (default from the workspace settings), \`q\` at most ` +
      `${LIMITS.search.queryLength} characters. The charge comes before the embedding call and is refunded ` +
      'when it fails.',
    credits: ['ontology.search.vector'],
    body: NodeSearchRequest,
    example: { q: 'Ada', top_k: 10, mode: 'hybrid' },
    response: NodeSearchResponse,
    errors,
    handler: ({ auth, body }) => search.searchNodes(auth, body),
  }),
];
