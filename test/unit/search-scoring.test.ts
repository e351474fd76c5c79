import { expect } from 'chai';
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
    const weights = { vectorWeight: 0.7, structuralWeight: 0.3, importanceRanking: false };
    expect(combinedScore(1, 0.5, 0.2, weights)).to.deep.equal({ score: 0.85, importance_multiplier: 1 });
    const ranked = combinedScore(1, 0.5, 0.2, { ...weights, importanceRanking: true });
    expect(ranked.importance_multiplier).to.equal(0.2);
    expect(ranked.score).to.be.closeTo(0.17, 1e-12);
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
