/**
 * From candidate lists to ranked results for POST /v1/ontology/search (knowledge-graph-service-api.md §4.1
 * rules 1–5, plus keyword search from issue 30), as pure functions over what the repository read.
 */
import type { NodeRow } from '../graph/repository';
import type { SearchSettings } from '../ontology-config/schemas';
import type { KeywordCandidate, StructuralCandidate, VectorCandidate } from './repository';
import type { SearchMode } from './schemas';
import type { Weights } from './scoring';
import { combinedScore, rankScore } from './scoring';

interface Merged {
  row: NodeRow;
  vector_score: number;
  structural_score: number;
  keyword_score: number;
  similarity: number | null;
}

export interface Ranked extends Merged {
  score: number;
  importance_multiplier: number;
}

export interface CandidateLists {
  vector: readonly VectorCandidate[];
  structural: readonly StructuralCandidate[];
  keyword: readonly KeywordCandidate[];
}

/**
 * Rules 1–3: which weights apply in each mode. Single-component modes rank by that component only;
 * hybrid takes the workspace's weights, keyword's 0 unless the workspace set `keyword_weight`.
 */
export function weightsFor(mode: SearchMode, settings: SearchSettings): Weights {
  const only = { vectorWeight: 0, structuralWeight: 0, keywordWeight: 0, importanceRanking: false };
  if (mode === 'vector') return { ...only, vectorWeight: 1 };
  if (mode === 'structural') return { ...only, structuralWeight: 1 };
  if (mode === 'keyword') return { ...only, keywordWeight: 1 };
  return {
    vectorWeight: settings.vector_weight,
    structuralWeight: settings.structural_weight,
    keywordWeight: settings.keyword_weight,
    importanceRanking: settings.importance_ranking,
  };
}

/**
 * Which candidate lists a search reads. Hybrid reads both of the contract's (rule 3) and the
 * keyword list only when its weight can move a score: a workspace that never set `keyword_weight`
 * pays for no keyword search.
 */
export function listsFor(mode: SearchMode, weights: Weights): Record<keyof CandidateLists, boolean> {
  const hybrid = mode === 'hybrid';
  return {
    vector: hybrid || mode === 'vector',
    structural: hybrid || mode === 'structural',
    keyword: mode === 'keyword' || (hybrid && weights.keywordWeight > 0),
  };
}

/** Rule 3: merge the candidate lists by node id; a component a node was not found by is 0. */
export function mergeCandidates(lists: CandidateLists): Map<string, Merged> {
  const merged = new Map<string, Merged>();
  const entry = (row: NodeRow) => {
    let found = merged.get(row.id);
    if (!found) {
      found = { row, vector_score: 0, structural_score: 0, keyword_score: 0, similarity: null };
      merged.set(row.id, found);
    }
    return found;
  };
  lists.vector.forEach((row, rank) => {
    const found = entry(row);
    found.vector_score = rankScore(rank, lists.vector.length);
    found.similarity = row.similarity;
  });
  for (const row of lists.structural) entry(row).structural_score = row.structural;
  lists.keyword.forEach((row, rank) => {
    entry(row).keyword_score = rankScore(rank, lists.keyword.length);
  });
  return merged;
}

const byId = (a: { row: NodeRow }, b: { row: NodeRow }) => (a.row.id < b.row.id ? -1 : 1);

/**
 * The whole ranking, best first (the caller keeps top_k): every candidate scored by rules 3–4 with
 * the mode's weights (keyword mode: its own list's order, scored by rank like vector candidates),
 * ties broken by cosine similarity, then id.
 */
export function rankResults(weights: Weights, lists: CandidateLists): Ranked[] {
  return [...mergeCandidates(lists).values()]
    .map((candidate) => {
      const components = {
        vector: candidate.vector_score,
        structural: candidate.structural_score,
        keyword: candidate.keyword_score,
      };
      return { ...candidate, ...combinedScore(components, candidate.row.importance_score, weights) };
    })
    .sort((a, b) => b.score - a.score || (b.similarity ?? -1) - (a.similarity ?? -1) || byId(a, b));
}
