import { defineRoute } from '../platform/api/route';
import { HybridSearchRequest, HybridSearchResponse, NodeSearchRequest, NodeSearchResponse } from './schemas';
import type { SearchService } from './service';

const tags = ['search'];
const errors = {
  402: 'Insufficient credits or account locked: {"detail":{"error":"insufficient_credits","required","available","kind"}}',
  502: 'The embedding provider failed; the charge is refunded',
};

export const searchRoutes = (search: SearchService) => [
  defineRoute({
    method: 'post',
    path: '/v1/ontology/search',
    tags,
    scope: 'search:read',
    summary: 'Vector, structural or hybrid search over the workspace’s nodes (1 credit, ontology.search.hybrid)',
    body: HybridSearchRequest,
    response: HybridSearchResponse,
    errors,
    handler: ({ auth, body }) => search.search(auth, body),
  }),
  defineRoute({
    method: 'post',
    path: '/v1/ontology/nodes/search',
    tags,
    scope: 'search:read',
    summary:
      'Semantic, keyword or hybrid node search (1 credit, ontology.search.vector, charged before the embedding call)',
    body: NodeSearchRequest,
    response: NodeSearchResponse,
    errors,
    handler: ({ auth, body }) => search.searchNodes(auth, body),
  }),
];
