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
import type { EmbeddingProvider } from '../platform/llm/embedding-provider';
import { UpstreamError } from '../platform/llm/errors';
import type { StructuralCandidate, VectorCandidate } from './repository';
import { enableIterativeIndexScan, keywordCandidates, structuralCandidates, vectorCandidates } from './repository';
import type { HybridSearchRequest, HybridSearchResponse, NodeSearchRequest, SearchMode } from './schemas';
import type { Weights } from './scoring';
import { combinedScore, rankScore, reciprocalRankFusion } from './scoring';

interface Merged {
  row: NodeRow;
  vector_score: number;
  structural_score: number;
  similarity: number | null;
}

/** Rules 1–3: which weights apply in each mode. Single-component modes rank by that component only. */
function weightsFor(mode: SearchMode, settings: SearchSettings): Weights {
  if (mode === 'vector') return { vectorWeight: 1, structuralWeight: 0, importanceRanking: false };
  if (mode === 'structural') return { vectorWeight: 0, structuralWeight: 1, importanceRanking: false };
  return {
    vectorWeight: settings.vector_weight,
    structuralWeight: settings.structural_weight,
    importanceRanking: settings.importance_ranking,
  };
}

/** Rule 3: merge both candidate lists by node id; a component a node was not found by is 0. */
export function mergeCandidates(
  vector: readonly VectorCandidate[],
  structural: readonly StructuralCandidate[],
): Map<string, Merged> {
  const merged = new Map<string, Merged>();
  vector.forEach((row, rank) => {
    merged.set(row.id, {
      row,
      vector_score: rankScore(rank, vector.length),
      structural_score: 0,
      similarity: row.similarity,
    });
  });
  for (const row of structural) {
    const found = merged.get(row.id);
    if (found) found.structural_score = row.structural;
    else merged.set(row.id, { row, vector_score: 0, structural_score: row.structural, similarity: null });
  }
  return merged;
}

/** The workspace's search settings, read in a charge's transaction (`chargeFor`'s `prepare`). */
export const searchSettings = async (m: EntityManager) => (await readOntologyConfig(m)).search;

/**
 * Search (knowledge-graph-service-api.md §4.1). Each call is charged through `credits.chargeFor`: the charge (and the
 * workspace's search settings) in one short transaction, 402 before any model call; the query is
 * embedded outside any transaction and searched in a second one under the workspace's RLS scope,
 * which also confirms the charge. A failure before that refunds it; a process that dies in
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
    const embedding = mode === 'structural' ? undefined : await embedQuery(request.q);
    const { vector, structural } = await uow(scopeOf(principal), async (m) => {
      let vector: VectorCandidate[] = [];
      if (embedding) {
        await enableIterativeIndexScan(m, topK);
        vector = await vectorCandidates(m, {
          workspaceId: principal.workspaceId,
          embedding,
          topK,
          types,
          minSimilarity: settings.min_similarity_threshold,
        });
      }
      const structural =
        mode === 'vector' ? [] : await structuralCandidates(m, { workspaceId: principal.workspaceId, topK, types });
      // What follows is scoring in memory: the charge stands once these reads commit.
      await confirm(m);
      return { vector, structural };
    });

    const weights = weightsFor(mode, settings);
    const results = [...mergeCandidates(vector, structural).values()]
      .map((candidate) => {
        const { score, importance_multiplier } = combinedScore(
          candidate.vector_score,
          candidate.structural_score,
          candidate.row.importance_score,
          weights,
        );
        return { candidate, score, importance_multiplier };
      })
      .sort(
        (a, b) =>
          b.score - a.score ||
          (b.candidate.similarity ?? -1) - (a.candidate.similarity ?? -1) ||
          (a.candidate.row.id < b.candidate.row.id ? -1 : 1),
      )
      .slice(0, topK)
      .map(({ candidate, score, importance_multiplier }) => ({
        node: toNodeResponse(candidate.row),
        score,
        components: {
          vector_score: candidate.vector_score,
          structural_score: candidate.structural_score,
          importance_multiplier,
          similarity: candidate.similarity,
        },
      }));

    return {
      results,
      mode,
      query_plan: {
        mode,
        top_k: topK,
        filters: { type: types },
        vector_weight: weights.vectorWeight,
        structural_weight: weights.structuralWeight,
        importance_ranking: weights.importanceRanking,
        result_count: results.length,
        min_similarity_threshold: settings.min_similarity_threshold,
        candidates: { vector: vector.length, structural: structural.length },
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
        const { semantic, keyword } = await uow(scopeOf(principal), async (m) => {
          let semantic: VectorCandidate[] = [];
          if (embedding) {
            await enableIterativeIndexScan(m, depth);
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
