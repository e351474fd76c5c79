import type { ImportanceSettings } from '../ontology-config/schemas';

const MS_PER_DAY = 86_400_000;

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
 * Contract 2.7, per node:
 * (base_salience + reference_count * boost_per_reference * exp(-recency_lambda * age_touch))
 *   * exp(-base_decay_lambda * age_created),
 * the recency factor dropped when recency does not influence importance, then held between
 * min_importance (the floor below which decay stops) and max_importance (the ceiling).
 */
export function importanceScore(node: ImportanceInput, settings: ImportanceSettings, now: Date): number {
  const touchAge = ageDays(node.lastTouchAt, now);
  const createdAge = ageDays(node.createdAt, now);
  const recency = settings.recency_influences_importance ? Math.exp(-settings.recency_lambda * touchAge) : 1;
  const raw =
    (node.baseSalience + node.referenceCount * settings.boost_per_reference * recency) *
    Math.exp(-settings.base_decay_lambda * createdAge);
  return Math.min(settings.max_importance, Math.max(settings.min_importance, raw));
}

/**
 * The same formula as SQL over a `nodes` row aliased `n`, for set-based updates; `now` is the
 * transaction's clock. Parameters from `$first`, as `importanceSqlParams` orders them.
 * `referenceCount` / `lastTouchAt` let an UPDATE use the values it is about to write.
 */
export function importanceSql(first: number, terms: { referenceCount?: string; lastTouchAt?: string } = {}): string {
  const p = (i: number) => `$${first + i}::float8`;
  const refs = terms.referenceCount ?? 'n.reference_count';
  const touched = terms.lastTouchAt ?? 'n.last_touch_at';
  return `LEAST(${p(4)}, GREATEST(${p(3)},
  (n.base_salience + ${refs} * ${p(2)} * exp(-${p(1)} * GREATEST(0, extract(epoch FROM now() - ${touched}) / 86400)))
  * exp(-${p(0)} * GREATEST(0, extract(epoch FROM now() - n.created_at) / 86400))))`;
}

/** Parameters of `importanceSql`: base decay, recency rate (0 drops the factor), boost, floor, ceiling. */
export const importanceSqlParams = (s: ImportanceSettings): number[] => [
  s.base_decay_lambda,
  s.recency_influences_importance ? s.recency_lambda : 0,
  s.boost_per_reference,
  s.min_importance,
  s.max_importance,
];
