/**
 * Functional relations (issue 31 part 1): a source holds at most one current fact of each of these
 * edge types (compared upper-case). When an update prompt states a new one (Ada now WORKS_AT
 * another company), the old edge's validity is closed (`valid_to` = now) rather than deleted, so
 * the graph still says where she worked and until when.
 */
export const FUNCTIONAL_EDGE_TYPES: ReadonlySet<string> = new Set([
  'WORKS_AT',
  'WORKS_FOR',
  'EMPLOYED_BY',
  'LIVES_IN',
  'REPORTS_TO',
  'MARRIED_TO',
  'HEADQUARTERED_IN',
]);

export const isFunctionalEdgeType = (type: string) => FUNCTIONAL_EDGE_TYPES.has(type.toUpperCase());

/** How long graph versions are kept by default (`VERSION_RETENTION_DAYS`), and the purge's batch. */
export const VERSION_RETENTION = { defaultDays: 90, purgeBatch: 5000 } as const;
