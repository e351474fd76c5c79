import { z } from 'zod';
import { LIMITS } from '../rules/limits';

const unit = z.number().min(0).max(1);
const rate = z.number().min(0).max(10);

/** knowledge-graph-service-api.md §2.7, search settings, with their defaults. */
export const SearchSettings = z
  .object({
    retrieval_mode: z.enum(['vector', 'structural', 'hybrid']).default('hybrid'),
    vector_weight: unit.default(0.6),
    structural_weight: unit.default(0.4),
    // Not in the contract: keyword search enters hybrid scores only through this weight (issue 39).
    keyword_weight: unit
      .default(0)
      .describe('Weight on the keyword score in hybrid search; 0 (the default) runs no keyword search there.'),
    min_similarity_threshold: unit.default(0.7),
    default_top_k: z.number().int().min(1).max(LIMITS.search.maxTopK).default(LIMITS.search.defaultTopK),
    importance_ranking: z.boolean().default(true),
  })
  .meta({ id: 'SearchSettings' });

/** knowledge-graph-service-api.md §2.7, importance settings. */
export const ImportanceSettings = z
  .object({
    recency_influences_importance: z.boolean().default(true),
    recency_lambda: rate.default(0.05),
    boost_per_reference: unit.default(0.1),
    base_decay_lambda: rate.default(0.01),
    max_importance: unit.default(1.0),
    min_importance: unit.default(0.0),
  })
  .meta({ id: 'ImportanceSettings' });

/** knowledge-graph-service-api.md §2.7, resolver settings. */
export const ResolverSettings = z
  .object({
    person_resolver_enabled: z.boolean().default(true),
    organization_resolver_enabled: z.boolean().default(false).describe('Reserved; not active.'),
    merge_confidence_threshold: unit.default(0.9),
    auto_merge_enabled: z.boolean().default(false),
  })
  .meta({ id: 'ResolverSettings' });

/** Which writes wait for a reviewer as change-sets instead of writing (issue 31 part 4, docs/change-sets.md). */
export const StagingSettings = z
  .object({
    update_prompts: z
      .boolean()
      .default(false)
      .describe('Update prompts stage a change-set instead of writing (a prompt may also ask with `stage: true`).'),
    agent_writes: z
      .boolean()
      .default(false)
      .describe(
        'Graph-writing capabilities called by an agent (an MCP token, or a run’s step) stage a change-set instead ' +
          '(one per call).',
      ),
  })
  .meta({ id: 'StagingSettings' });

export const OntologyConfig = z
  .object({
    search: SearchSettings,
    importance: ImportanceSettings,
    resolver: ResolverSettings,
    staging: StagingSettings,
  })
  .meta({ id: 'OntologyConfig' });

export type SearchSettings = z.output<typeof SearchSettings>;
export type ImportanceSettings = z.output<typeof ImportanceSettings>;
export type ResolverSettings = z.output<typeof ResolverSettings>;
export type StagingSettings = z.output<typeof StagingSettings>;
export type OntologyConfig = z.output<typeof OntologyConfig>;

// A patch names only what changes; no defaults may sneak in, so each group is partial and strict.
const partialOf = <T extends z.ZodObject<z.ZodRawShape>>(schema: T) =>
  z.strictObject(
    Object.fromEntries(
      Object.entries(schema.shape).map(([key, field]) => [key, (field as z.ZodDefault<z.ZodType>).unwrap().optional()]),
    ),
  );

export const OntologyConfigPatch = z
  .strictObject({
    search: partialOf(SearchSettings).optional(),
    importance: partialOf(ImportanceSettings).optional(),
    resolver: partialOf(ResolverSettings).optional(),
    staging: partialOf(StagingSettings).optional(),
  })
  .meta({ id: 'OntologyConfigPatch' });
export type OntologyConfigPatch = z.infer<typeof OntologyConfigPatch>;
