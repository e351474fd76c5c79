/**
 * knowledge-graph-service-api.md §4.1, search rules 1–5, as pure functions: the repository finds candidates, these
 * turn them into scores.
 */

export const RECENCY_HALF_LIFE_DAYS = 7;
const MS_PER_DAY = 86_400_000;
/** Reciprocal-rank-fusion constant for /nodes/search hybrid (the usual 60). */
export const RRF_K = 60;

/** Rule 5: 1 for a node touched now, 0.5 after 7 days, 0.25 after 14. */
export function recencyScore(lastTouchAt: Date, now: Date): number {
  const ageDays = Math.max(0, (now.getTime() - lastTouchAt.getTime()) / MS_PER_DAY);
  return 0.5 ** (ageDays / RECENCY_HALF_LIFE_DAYS);
}

/** Rule 5: structural candidates blend recency and importance 50/50. */
export const structuralScore = (recency: number, importance: number) => 0.5 * recency + 0.5 * importance;

/**
 * Rule 5: vector candidates are scored by rank, not raw cosine: of n candidates the first gets 1
 * and each next one 1/n less (1, 0.9, …, 0.1 for ten). Keyword candidates are scored the same way.
 */
export const rankScore = (rank: number, count: number) => (count <= 0 ? 0 : 1 - rank / count);

/**
 * Rule 3's weights, plus keyword search's: the contract has two signals, and keyword enters a
 * score only through an explicit third weight (0 unless the workspace sets `keyword_weight`).
 */
export interface Weights {
  vectorWeight: number;
  structuralWeight: number;
  keywordWeight: number;
  importanceRanking: boolean;
}

/** A node's component scores; one a node was not found by is 0. */
export interface Components {
  vector: number;
  structural: number;
  keyword: number;
}

/**
 * Rules 3 and 4: score = vector_weight · v + structural_weight · s (+ keyword_weight · k), times
 * importance_score when ranking by importance.
 */
export function combinedScore(components: Components, importance: number, weights: Weights) {
  const multiplier = weights.importanceRanking ? importance : 1;
  const weighted =
    weights.vectorWeight * components.vector +
    weights.structuralWeight * components.structural +
    weights.keywordWeight * components.keyword;
  return { score: weighted * multiplier, importance_multiplier: multiplier };
}

/** Reciprocal rank fusion of ranked id lists (best first). */
export function reciprocalRankFusion(lists: readonly (readonly string[])[]): Map<string, number> {
  const scores = new Map<string, number>();
  for (const list of lists) {
    for (const [rank, id] of list.entries()) scores.set(id, (scores.get(id) ?? 0) + 1 / (RRF_K + rank + 1));
  }
  return scores;
}
