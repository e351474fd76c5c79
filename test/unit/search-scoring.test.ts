import { expect } from 'chai';
import type { NodeRow } from '../../src/graph/repository';
import { SearchSettings } from '../../src/ontology-config/schemas';
import type { CandidateLists } from '../../src/search/ranking';
import { listsFor, rankResults, weightsFor } from '../../src/search/ranking';
import type { SearchMode } from '../../src/search/schemas';
import {
  combinedScore,
  rankScore,
  recencyScore,
  reciprocalRankFusion,
  structuralScore,
} from '../../src/search/scoring';

const DAY = 86_400_000;

describe('search scoring, rules 1–5 of the contract (knowledge-graph-service-api.md 4.1)', () => {
  const now = new Date('2026-11-23T00:00:00Z');

  it('halves recency every seven days, and never exceeds 1 for a touch in the future', () => {
    expect(recencyScore(now, now)).to.equal(1);
    expect(recencyScore(new Date(now.getTime() - 7 * DAY), now)).to.be.closeTo(0.5, 1e-12);
    expect(recencyScore(new Date(now.getTime() - 14 * DAY), now)).to.be.closeTo(0.25, 1e-12);
    expect(recencyScore(new Date(now.getTime() + DAY), now)).to.equal(1);
  });

  it('scores vector candidates by rank: 1, 0.9, … 0.1 for ten, and 0 when there are none', () => {
    expect(Array.from({ length: 10 }, (_, rank) => rankScore(rank, 10))).to.deep.equal([
      1, 0.9, 0.8, 0.7, 0.6, 0.5, 0.4, 0.30000000000000004, 0.19999999999999996, 0.09999999999999998,
    ]);
    expect(rankScore(0, 0)).to.equal(0);
  });

  it('blends a structural candidate 50/50 from recency and importance', () => {
    expect(structuralScore(1, 0)).to.equal(0.5);
    expect(structuralScore(0.5, 0.5)).to.equal(0.5);
  });

  it('weights the components and multiplies by importance only when ranking by importance', () => {
    const weights = { vectorWeight: 0.7, structuralWeight: 0.3, keywordWeight: 0, importanceRanking: false };
    const components = { vector: 1, structural: 0.5, keyword: 1 };
    expect(combinedScore(components, 0.2, weights)).to.deep.equal({ score: 0.85, importance_multiplier: 1 });
    const ranked = combinedScore(components, 0.2, { ...weights, importanceRanking: true });
    expect(ranked.importance_multiplier).to.equal(0.2);
    expect(ranked.score).to.be.closeTo(0.17, 1e-12);
  });

  it('the contract’s example: vector 1, structural 0.75, importance 0.5 scores 0.45 with the default weights', () => {
    const weights = weightsFor('hybrid', SearchSettings.parse({}));
    expect(weights).to.deep.equal({
      vectorWeight: 0.6,
      structuralWeight: 0.4,
      keywordWeight: 0,
      importanceRanking: true,
    });
    // (0.6 × 1 + 0.4 × 0.75) × 0.5; a keyword match adds nothing while keyword_weight is 0.
    for (const keyword of [0, 1]) {
      const { score, importance_multiplier } = combinedScore({ vector: 1, structural: 0.75, keyword }, 0.5, weights);
      expect(score).to.be.closeTo(0.45, 1e-12);
      expect(importance_multiplier).to.equal(0.5);
    }
  });

  it('adds keyword as a third weighted term only when the workspace sets keyword_weight', () => {
    const weights = weightsFor('hybrid', SearchSettings.parse({ keyword_weight: 0.5 }));
    // (0.6 × 1 + 0.4 × 0.75 + 0.5 × 0.8) × 0.5
    expect(combinedScore({ vector: 1, structural: 0.75, keyword: 0.8 }, 0.5, weights).score).to.be.closeTo(0.65, 1e-12);
  });

  it('hybrid reads the keyword list only when its weight is above 0; each single mode reads its own list', () => {
    const settings = SearchSettings.parse({});
    const reads = (mode: SearchMode, keyword_weight = 0) =>
      listsFor(mode, weightsFor(mode, { ...settings, keyword_weight }));
    expect(reads('hybrid')).to.deep.equal({ vector: true, structural: true, keyword: false });
    expect(reads('hybrid', 0.2)).to.deep.equal({ vector: true, structural: true, keyword: true });
    expect(reads('vector', 0.2)).to.deep.equal({ vector: true, structural: false, keyword: false });
    expect(reads('structural')).to.deep.equal({ vector: false, structural: true, keyword: false });
    expect(reads('keyword')).to.deep.equal({ vector: false, structural: false, keyword: true });
  });

  it('ranks merged candidates by the weighted score: a node found by both lists scores both terms', () => {
    const node = (id: string, importance_score: number) => ({ id, importance_score }) as unknown as NodeRow;
    const lists = {
      // Vector ranks: a (1), b (0.5).
      vector: [
        { ...node('a', 0.5), similarity: 0.95 },
        { ...node('b', 1), similarity: 0.9 },
      ],
      structural: [{ ...node('a', 0.5), recency: 1, structural: 0.75 }],
      keyword: [{ ...node('c', 1), keyword_rank: 1 }],
    } as unknown as CandidateLists;
    const ranked = rankResults(weightsFor('hybrid', SearchSettings.parse({})), lists);
    expect(ranked.map((r) => [r.row.id, r.score])).to.deep.equal([
      ['a', 0.45],
      ['b', 0.3],
      ['c', 0],
    ]);
    expect(ranked[0]).to.deep.include({ vector_score: 1, structural_score: 0.75, importance_multiplier: 0.5 });
  });

  it('fuses ranked lists by reciprocal rank: an id found by both lists beats ids found once', () => {
    const fused = reciprocalRankFusion([
      ['a', 'b'],
      ['b', 'c'],
    ]);
    const order = [...fused.entries()].sort((x, y) => y[1] - x[1]).map(([id]) => id);
    expect(order).to.deep.equal(['b', 'a', 'c']);
  });
});
