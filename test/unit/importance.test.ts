import { expect } from 'chai';
import { ageDays, importanceScore, MAX_DECAY_EXPONENT, NEGLIGIBLE } from '../../src/importance/formula';
import { baseSalienceFor, DEFAULT_BASE_SALIENCE } from '../../src/importance/salience';
import { ImportanceSettings } from '../../src/ontology-config/schemas';

const DAY = 86_400_000;
const now = new Date('2026-01-31T00:00:00Z');
const daysAgo = (days: number) => new Date(now.getTime() - days * DAY);
const defaults = ImportanceSettings.parse({});

describe('importance formula (contract 2.7)', () => {
  it('is base_salience at age 0 with no references', () => {
    expect(
      importanceScore({ baseSalience: 0.5, referenceCount: 0, lastTouchAt: now, createdAt: now }, defaults, now),
    ).to.equal(0.5);
  });

  it('matches hand-computed values with the default settings', () => {
    // (0.4 + 3 * 0.1 * e^(-0.05*2)) * e^(-0.01*10) = (0.4 + 0.3 * 0.904837418) * 0.904837418 = 0.607554
    const score = importanceScore(
      { baseSalience: 0.4, referenceCount: 3, lastTouchAt: daysAgo(2), createdAt: daysAgo(10) },
      defaults,
      now,
    );
    expect(score).to.be.closeTo(0.6075542, 1e-6);
    // (0.3 + 0) * e^(-0.01*100) = 0.3 * 0.367879441 = 0.110363832
    expect(
      importanceScore(
        { baseSalience: 0.3, referenceCount: 0, lastTouchAt: daysAgo(100), createdAt: daysAgo(100) },
        defaults,
        now,
      ),
    ).to.be.closeTo(0.1103638, 1e-6);
  });

  it('drops the recency factor when recency does not influence importance', () => {
    const settings = { ...defaults, recency_influences_importance: false };
    // (0.4 + 3 * 0.1) * e^(-0.01*10) = 0.7 * 0.904837418 = 0.633386193
    expect(
      importanceScore(
        { baseSalience: 0.4, referenceCount: 3, lastTouchAt: daysAgo(2), createdAt: daysAgo(10) },
        settings,
        now,
      ),
    ).to.be.closeTo(0.6333862, 1e-6);
  });

  it('measures the reference term from last_touch_at and the decay from created_at', () => {
    const settings = { ...defaults, recency_lambda: 0.5, base_decay_lambda: 0 };
    // 0.2 + 2 * 0.1 * e^(-0.5 * 4) = 0.2 + 0.2 * 0.135335283 = 0.227067057;
    // created_at plays no part when base decay is 0.
    const recent = importanceScore(
      { baseSalience: 0.2, referenceCount: 2, lastTouchAt: daysAgo(4), createdAt: daysAgo(400) },
      settings,
      now,
    );
    expect(recent).to.be.closeTo(0.2270671, 1e-6);
  });

  it('holds the ceiling and the floor', () => {
    const settings = { ...defaults, max_importance: 0.8, min_importance: 0.15 };
    expect(
      importanceScore({ baseSalience: 0.9, referenceCount: 50, lastTouchAt: now, createdAt: now }, settings, now),
    ).to.equal(0.8);
    expect(
      importanceScore(
        { baseSalience: 0.1, referenceCount: 0, lastTouchAt: daysAgo(900), createdAt: daysAgo(900) },
        settings,
        now,
      ),
    ).to.equal(0.15);
    expect(
      importanceScore({ baseSalience: 1, referenceCount: 20, lastTouchAt: now, createdAt: now }, defaults, now),
    ).to.equal(1);
  });

  it('holds each decay exponent at a bound, so a steep rate on an old node gives a tiny positive score, not 0', () => {
    const settings = { ...defaults, base_decay_lambda: 10, recency_lambda: 10 };
    // 10/day over 75 days is exp(-750): below float8's range, where Postgres raises an error.
    const old = { baseSalience: 0.5, referenceCount: 1, lastTouchAt: daysAgo(75), createdAt: daysAgo(75) };
    const bound = Math.exp(-MAX_DECAY_EXPONENT);
    expect(importanceScore(old, settings, now)).to.equal((0.5 + 0.1 * bound) * bound);
    expect(importanceScore(old, settings, now)).to.be.greaterThan(0);
    // Past the bound, more age changes nothing; the floor still applies above it.
    const older = { ...old, lastTouchAt: daysAgo(7500), createdAt: daysAgo(7500) };
    expect(importanceScore(older, settings, now)).to.equal(importanceScore(old, settings, now));
    expect(importanceScore(old, { ...settings, min_importance: 0.05 }, now)).to.equal(0.05);
  });

  it('counts a base salience, boost or rate below NEGLIGIBLE as 0 (no product can underflow in SQL)', () => {
    const node = { baseSalience: 5e-324, referenceCount: 2, lastTouchAt: daysAgo(1), createdAt: daysAgo(1) };
    const settings = { ...defaults, boost_per_reference: NEGLIGIBLE / 2, base_decay_lambda: 1e-300 };
    expect(importanceScore(node, settings, now)).to.equal(0);
    expect(importanceScore({ ...node, baseSalience: 0.5 }, settings, now)).to.equal(0.5);
  });

  it('treats a timestamp in the future as age 0', () => {
    expect(ageDays(new Date(now.getTime() + DAY), now)).to.equal(0);
    expect(ageDays(daysAgo(1.5), now)).to.equal(1.5);
  });

  it('derives base salience from the type, its family, or the default', () => {
    expect(baseSalienceFor('person')).to.equal(0.7);
    expect(baseSalienceFor('code.function')).to.equal(0.4);
    expect(baseSalienceFor('code.unknown_kind')).to.equal(0.4);
    expect(baseSalienceFor('widget')).to.equal(DEFAULT_BASE_SALIENCE);
  });
});
