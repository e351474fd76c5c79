/**
 * knowledge-graph-service-api.md §8: every metered operation and its cost, in one place. Services reserve by
 * kind and never write a number themselves.
 */
export const CREDIT_COSTS = {
  'ontology.prompt.update': 5,
  'ontology.prompt.query': 3,
  'ontology.prompt.both': 7,
  'ontology.search.hybrid': 1,
  'ontology.search.vector': 1,
  // The contract prices symbol-context at 1 credit without naming its kind.
  'ontology.symbol_context': 1,
  'worker.embed_node': 1,
  'worker.recompute_type': 0,
  'worker.person_resolve': 0,
  // Not in the contract (review NL-6): a forced community pass runs Louvain over up to
  // LIMITS.communities.maxNodes nodes and, with a hosted model, re-summarises communities. A pass the
  // schedule decides on, or a refresh without `force`, is free.
  'ontology.communities.refresh_forced': 10,
  // Not in the contract (issue 41): one call of a connector's remote tool, times the connector's
  // `credits_per_call` (the quantity; 0–100, default 1).
  'connector.call': 1,
} as const satisfies Record<string, number>;

export type CreditKind = keyof typeof CREDIT_COSTS;

export const CREDIT_KINDS = Object.keys(CREDIT_COSTS) as CreditKind[];

/**
 * What each capability (`/v1/cap/<tool>`) charges, by credit kind: the price of the REST route doing
 * the same work. A tool not listed is free (every `agent.*` and `billing.*` tool, and the graph's
 * reads and writes, free like their routes). `ontology.remember` is charged by the update prompt it runs.
 */
export const CAPABILITY_CREDIT_KINDS: Readonly<Record<string, CreditKind>> = {
  'ontology.ask': 'ontology.prompt.query',
  'ontology.search': 'ontology.search.hybrid',
  'ontology.remember': 'ontology.prompt.update',
  'ontology.symbol_context': 'ontology.symbol_context',
};

/** Ledger kinds that are not charges: an operator's grant is a tenant-level positive row. */
export const CREDIT_GRANT_KIND = 'credits.grant';

export type LedgerKind = CreditKind | typeof CREDIT_GRANT_KIND;

export const isCreditKind = (value: string): value is CreditKind => Object.hasOwn(CREDIT_COSTS, value);

/** The price of `quantity` units of `kind` (embedding 30 nodes is 30 × worker.embed_node). */
export const creditCost = (kind: CreditKind, quantity = 1): number => CREDIT_COSTS[kind] * quantity;
