/**
 * From candidate lists to ranked results for POST /v1/ontology/search (knowledge-graph-service-api.md §4.1
 * rules 1–5, plus keyword search from issue 30), as pure functions over what the repository read.
 */
import type { NodeRow } from '../graph/repository';
import type { SearchSettings } from '../ontology-config/schemas';
import type { KeywordCandidate, StructuralCandidate, VectorCandidate } from './repository';
import type { SearchMode } from './schemas';
import type { Weights } from './scoring';
import { combinedScore, rankScore, reciprocalRankFusion } from './scoring';

interface Merged {
  row: NodeRow;
  vector_score: number;
  structural_score: number;
  similarity: number | null;
}

export interface Ranked extends Merged {
  score: number;
  importance_multiplier: number;
  keyword_score: number;
  weighted_score: number;
}

/** Rules 1–3: which weights apply in each mode. Single-component modes rank by that component only. */
export function weightsFor(mode: SearchMode, settings: SearchSettings): Weights {
  if (mode === 'vector') return { vectorWeight: 1, structuralWeight: 0, importanceRanking: false };
  if (mode === 'structural') return { vectorWeight: 0, structuralWeight: 1, importanceRanking: false };
  if (mode === 'keyword') return { vectorWeight: 0, structuralWeight: 0, importanceRanking: false };
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

const byId = (a: { row: NodeRow }, b: { row: NodeRow }) => (a.row.id < b.row.id ? -1 : 1);

/**
 * The whole ranking, best first (the caller keeps top_k):
 * - vector, structural: rules 3–4 (`weighted_score`), keyword_score 0.
 * - keyword: the keyword list's own order, scored by rank like vector candidates (1, 1 − 1/n, …).
 * - hybrid: the rules 3–4 ranking of vector ∪ structural and the keyword ranking fused by reciprocal
 *   rank: score = 1 / (RRF_K + rank in the weighted list) + 1 / (RRF_K + rank in the keyword list),
 *   a missing list adding 0. Rank, not raw scores, so the three signals' different scales need no
 *   calibration; a node that both the weighted list and the keyword list rank high comes first.
 */
export function rankResults(
  mode: SearchMode,
  weights: Weights,
  lists: {
    vector: readonly VectorCandidate[];
    structural: readonly StructuralCandidate[];
    keyword: readonly KeywordCandidate[];
  },
): Ranked[] {
  const weighted: Ranked[] = [...mergeCandidates(lists.vector, lists.structural).values()]
    .map((candidate) => {
      const { score, importance_multiplier } = combinedScore(
        candidate.vector_score,
        candidate.structural_score,
        candidate.row.importance_score,
        weights,
      );
      return { ...candidate, score, importance_multiplier, keyword_score: 0, weighted_score: score };
    })
    .sort((a, b) => b.score - a.score || (b.similarity ?? -1) - (a.similarity ?? -1) || byId(a, b));
  const keywordScores = new Map(lists.keyword.map((row, rank) => [row.id, rankScore(rank, lists.keyword.length)]));
  if (mode === 'keyword') {
    return lists.keyword.map((row) => {
      const score = keywordScores.get(row.id) ?? 0;
      const base = { row, vector_score: 0, structural_score: 0, similarity: null, importance_multiplier: 1 };
      return { ...base, score, keyword_score: score, weighted_score: score };
    });
  }
  if (mode !== 'hybrid') return weighted;

  const entries = new Map<string, Ranked>(weighted.map((entry) => [entry.row.id, entry]));
  for (const row of lists.keyword) {
    const found = entries.get(row.id);
    const keyword_score = keywordScores.get(row.id) ?? 0;
    if (found) found.keyword_score = keyword_score;
    else {
      const multiplier = weights.importanceRanking ? row.importance_score : 1;
      entries.set(row.id, {
        row,
        vector_score: 0,
        structural_score: 0,
        similarity: null,
        importance_multiplier: multiplier,
        keyword_score,
        weighted_score: 0,
        score: 0,
      });
    }
  }
  const fused = reciprocalRankFusion([weighted.map((entry) => entry.row.id), lists.keyword.map((row) => row.id)]);
  return [...entries.values()]
    .map((entry) => ({ ...entry, score: fused.get(entry.row.id) ?? 0 }))
    .sort((a, b) => b.score - a.score || b.weighted_score - a.weighted_score || byId(a, b));
}
