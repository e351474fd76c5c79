/**
 * base_salience by node type, assigned at creation (knowledge-graph-service-api.md §2.7: "type-derived"). People and
 * organisations anchor most questions; fragments of text and code matter less on their own.
 * A type absent from the table gets the default; a `code.*` type falls back to its family.
 */
export const BASE_SALIENCE: Readonly<Record<string, number>> = {
  person: 0.7,
  organization: 0.7,
  project: 0.65,
  product: 0.6,
  team: 0.6,
  decision: 0.6,
  event: 0.55,
  place: 0.5,
  concept: 0.5,
  topic: 0.5,
  task: 0.45,
  document: 0.4,
  'code.module': 0.45,
  'code.class': 0.45,
  'code.function': 0.4,
  'code.method': 0.35,
  code: 0.4,
  note: 0.3,
  message: 0.3,
  'agent.finding': 0.5,
};

export const DEFAULT_BASE_SALIENCE = 0.5;

export function baseSalienceFor(type: string): number {
  const exact = BASE_SALIENCE[type];
  if (exact !== undefined) return exact;
  const family = BASE_SALIENCE[type.split('.')[0] ?? ''];
  return family ?? DEFAULT_BASE_SALIENCE;
}
