import type { EntityManager } from 'typeorm';
import type { Charge, CreditService } from '../credits/service';
import type { NodeRow } from '../graph/repository';
import { toNodeResponse } from '../graph/repository';
import type { NodeResponse } from '../graph/schemas';
import type { SearchSettings } from '../ontology-config/schemas';
import { readOntologyConfig } from '../ontology-config/service';
import type { Principal } from '../platform/auth/principal';
import { scopeOf } from '../platform/auth/principal';
import type { UnitOfWork } from '../platform/db/unit-of-work';
import type { EmbeddingProvider } from '../platform/llm/embedding/contract';
import { UpstreamError } from '../platform/llm/errors';
import { listsFor, rankResults, weightsFor } from './ranking';
import type { StructuralCandidate, VectorCandidate } from './repository';
import {
  hybridCandidates,
  keywordCandidates,
  structuralCandidates,
  vectorCandidates,
  vectorScanSettings,
} from './repository';
import type { HybridSearchRequest, HybridSearchResponse, NodeSearchRequest } from './schemas';
import { reciprocalRankFusion } from './scoring';

/**
 * The vector and structural lists a search reads (either, both or none): both in one statement when
 * it needs both (hybrid), so a hybrid search costs the round trips of one list.
 */
export async function vectorAndStructural(
  m: EntityManager,
  input: {
    workspaceId: string;
    topK: number;
    types: readonly string[];
    embedding: number[] | undefined;
    structural: boolean;
    minSimilarity: number;
  },
): Promise<{ vector: VectorCandidate[]; structural: StructuralCandidate[] }> {
  const { embedding, structural, ...scope } = input;
  if (embedding && structural) return hybridCandidates(m, { ...scope, embedding });
  return {
    vector: embedding ? await vectorCandidates(m, { ...scope, embedding }) : [],
    structural: structural ? await structuralCandidates(m, scope) : [],
  };
}

/**
 * A search's reads commit with its charge's confirmation, the transaction's only write, and answer
 * without waiting for the WAL flush (a few ms a request on a busy disk). A confirmation lost to a
 * database crash in the flush's fraction of a second leaves the charge pending, as a process that
 * dies before confirming does: the credits-reconcile pass refunds it. Never for the charge itself.
 */
export const CONFIRM_WITHOUT_FLUSH = { synchronous_commit: 'off' };

/** The workspace's search settings, read in a charge's transaction (`chargeFor`'s `prepare`). */
export const searchSettings = async (m: EntityManager) => (await readOntologyConfig(m)).search;

/**
 * Search (knowledge-graph-service-api.md §4.1). Each call is charged through `credits.chargeFor`: the
 * workspace's search settings and the charge in one short transaction (3 round trips), 402 before any
 * model call; the query is embedded outside any transaction and searched in a second one under the
 * workspace's RLS scope (3 round trips for hybrid: BEGIN with the scope, both lists, the confirmation
 * with COMMIT), which also confirms the charge. A failure before that refunds it; a process that dies in
 * between leaves it pending, and the credits-reconcile pass refunds it.
 */
export function createSearchService(deps: { uow: UnitOfWork; embeddings: EmbeddingProvider; credits: CreditService }) {
  const { uow, embeddings, credits } = deps;

  async function embedQuery(q: string): Promise<number[]> {
    const [vector] = await embeddings.embed([q]);
    if (!vector) throw new UpstreamError(embeddings.name, 'invalid_response');
    return vector;
  }

  /**
   * The hybrid search itself, once `charge` paid for it (rules 1–5, the workspace settings read in
   * the charge's transaction); it confirms the charge with its reads.
   */
  async function hybrid(
    principal: Principal,
    request: HybridSearchRequest,
    { receipt, prepared: settings, confirm }: Charge<SearchSettings>,
  ): Promise<HybridSearchResponse> {
    const mode = request.mode ?? settings.retrieval_mode;
    const topK = request.top_k ?? settings.default_top_k;
    const types = request.filters?.type ?? [];
    const scope = { workspaceId: principal.workspaceId, topK, types };
    const weights = weightsFor(mode, settings);
    const reads = listsFor(mode, weights);
    const embedding = reads.vector ? await embedQuery(request.q) : undefined;
    // The vector search's index settings ride in the BEGIN message: no round trip of their own.
    const scan = embedding ? vectorScanSettings(topK, types) : {};
    const lists = await uow({ ...scopeOf(principal), settings: { ...scan, ...CONFIRM_WITHOUT_FLUSH } }, async (m) => {
      const { vector, structural } = await vectorAndStructural(m, {
        ...scope,
        embedding,
        structural: reads.structural,
        minSimilarity: settings.min_similarity_threshold,
      });
      const keyword = reads.keyword ? await keywordCandidates(m, { ...scope, q: request.q }) : [];
      // What follows is scoring in memory: the charge stands once these reads commit, with it (one message).
      await confirm(m);
      return { vector, structural, keyword };
    });

    const results = rankResults(weights, lists)
      .slice(0, topK)
      .map(({ row, score, ...components }) => ({ node: toNodeResponse(row), score, components }));

    return {
      results,
      mode,
      query_plan: {
        mode,
        top_k: topK,
        filters: { type: types },
        vector_weight: weights.vectorWeight,
        structural_weight: weights.structuralWeight,
        keyword_weight: weights.keywordWeight,
        importance_ranking: weights.importanceRanking,
        result_count: results.length,
        min_similarity_threshold: settings.min_similarity_threshold,
        candidates: {
          vector: reads.vector ? lists.vector.length : null,
          structural: reads.structural ? lists.structural.length : null,
          keyword: reads.keyword ? lists.keyword.length : null,
        },
      },
      credit_receipt: receipt,
    };
  }

  return {
    /** POST /v1/ontology/search: vector, structural or hybrid, per rules 1–5 and the workspace settings. */
    search: (principal: Principal, request: HybridSearchRequest): Promise<HybridSearchResponse> =>
      credits.chargeFor(principal, 'ontology.search.hybrid', (charge) => hybrid(principal, request, charge), {
        prepare: searchSettings,
      }),

    /**
     * The same search for a caller that charged `ontology.search.hybrid` itself through
     * `credits.chargeFor` with `searchSettings` as its `prepare` (the capability layer).
     */
    searchPrepaid: hybrid,

    /**
     * POST /v1/ontology/nodes/search: semantic (cosine, above the workspace's similarity
     * threshold), keyword (every word in the name) or hybrid (reciprocal rank fusion of both).
     */
    async searchNodes(principal: Principal, request: NodeSearchRequest): Promise<NodeResponse[]> {
      const search = async ({ prepared: settings, confirm }: Charge<SearchSettings>) => {
        const topK = request.top_k ?? settings.default_top_k;
        const types = request.filters?.type ?? [];
        // Fusion needs some depth on both sides to reorder anything.
        const depth = request.mode === 'hybrid' ? topK * 2 : topK;
        const embedding = request.mode === 'keyword' ? undefined : await embedQuery(request.q);
        const scan = embedding ? vectorScanSettings(depth, types) : {};
        const knobs = { ...scan, ...CONFIRM_WITHOUT_FLUSH };
        const { semantic, keyword } = await uow({ ...scopeOf(principal), settings: knobs }, async (m) => {
          let semantic: VectorCandidate[] = [];
          if (embedding) {
            semantic = await vectorCandidates(m, {
              workspaceId: principal.workspaceId,
              embedding,
              topK: depth,
              types,
              minSimilarity: settings.min_similarity_threshold,
            });
          }
          const keyword =
            request.mode === 'semantic'
              ? []
              : await keywordCandidates(m, { workspaceId: principal.workspaceId, q: request.q, topK: depth, types });
          await confirm(m);
          return { semantic, keyword };
        });
        if (request.mode === 'semantic') return semantic.map(toNodeResponse);
        if (request.mode === 'keyword') return keyword.map(toNodeResponse);
        const rows = new Map<string, NodeRow>([...keyword, ...semantic].map((row) => [row.id, row]));
        const fused = reciprocalRankFusion([semantic.map((row) => row.id), keyword.map((row) => row.id)]);
        return [...fused.entries()]
          .sort((a, b) => b[1] - a[1] || (a[0] < b[0] ? -1 : 1))
          .slice(0, topK)
          .flatMap(([id]) => {
            const row = rows.get(id);
            return row ? [toNodeResponse(row)] : [];
          });
      };
      return credits.chargeFor(principal, 'ontology.search.vector', search, { prepare: searchSettings });
    },
  };
}

export type SearchService = ReturnType<typeof createSearchService>;
