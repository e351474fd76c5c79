import type { ImportanceSettings } from '../ontology-config/schemas';

const MS_PER_DAY = 86_400_000;

/**
 * Postgres raises an error where JavaScript quietly gives 0: exp() of a large negative number
 * underflows float8 ("value out of range: underflow"), and so does a product of two tiny
 * factors. Both forms of the formula therefore hold each decay exponent at this bound (a factor
 * of e^-300 ≈ 5e-131 ranks like 0) and count a base salience, boost or rate below NEGLIGIBLE as
 * 0, so no intermediate value leaves float8's normal range and both forms give the same number.
 */
export const MAX_DECAY_EXPONENT = 300;
export const NEGLIGIBLE = 1e-12;

const significant = (value: number) => (value < NEGLIGIBLE ? 0 : value);
const decayFactor = (rate: number, ageInDays: number) =>
  Math.exp(-Math.min(MAX_DECAY_EXPONENT, significant(rate) * ageInDays));

export interface ImportanceInput {
  baseSalience: number;
  referenceCount: number;
  /** Basis of the reference-term age. */
  lastTouchAt: Date;
  /** Basis of the global-decay age. */
  createdAt: Date;
}

/** Whole and fractional days from `from` to `now`; a timestamp in the future counts as age 0. */
export const ageDays = (from: Date, now: Date) => Math.max(0, (now.getTime() - from.getTime()) / MS_PER_DAY);

/**
 * knowledge-graph-service-api.md §2.7, per node:
 * (base_salience + reference_count * boost_per_reference * exp(-recency_lambda * age_touch))
 *   * exp(-base_decay_lambda * age_created),
 * the recency factor dropped when recency does not influence importance, then held between
 * min_importance (the floor below which decay stops) and max_importance (the ceiling). Each
 * exponent is held at MAX_DECAY_EXPONENT (see there).
 */
export function importanceScore(node: ImportanceInput, settings: ImportanceSettings, now: Date): number {
  const recency = settings.recency_influences_importance
    ? decayFactor(settings.recency_lambda, ageDays(node.lastTouchAt, now))
    : 1;
  const raw =
    (significant(node.baseSalience) + node.referenceCount * significant(settings.boost_per_reference) * recency) *
    decayFactor(settings.base_decay_lambda, ageDays(node.createdAt, now));
  return Math.min(settings.max_importance, Math.max(settings.min_importance, raw));
}

/**
 * The same formula as SQL over a `nodes` row aliased `n`, for set-based updates; `now` is the
 * transaction's clock. Parameters from `$first`, as `importanceSqlParams` orders them (already
 * rid of negligible values). `referenceCount` / `lastTouchAt` let an UPDATE use the values it is
 * about to write.
 */
export function importanceSql(first: number, terms: { referenceCount?: string; lastTouchAt?: string } = {}): string {
  const p = (i: number) => `$${first + i}::float8`;
  const refs = terms.referenceCount ?? 'n.reference_count';
  const touched = terms.lastTouchAt ?? 'n.last_touch_at';
  const decay = (rate: string, since: string) =>
    `exp(-LEAST(${MAX_DECAY_EXPONENT}, ${rate} * GREATEST(0, extract(epoch FROM now() - ${since}) / 86400)))`;
  const salience = `(CASE WHEN n.base_salience < ${NEGLIGIBLE} THEN 0 ELSE n.base_salience END)`;
  return `LEAST(${p(4)}, GREATEST(${p(3)},
  (${salience} + ${refs} * ${p(2)} * ${decay(p(1), touched)})
  * ${decay(p(0), 'n.created_at')}))`;
}

/** Parameters of `importanceSql`: base decay, recency rate (0 drops the factor), boost, floor, ceiling. */
export const importanceSqlParams = (s: ImportanceSettings): number[] => [
  significant(s.base_decay_lambda),
  s.recency_influences_importance ? significant(s.recency_lambda) : 0,
  significant(s.boost_per_reference),
  s.min_importance,
  s.max_importance,
];
