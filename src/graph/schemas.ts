import { z } from 'zod';
import { LIMITS } from '../rules/limits';

const timestamp = z.iso.datetime({ offset: true });
const workspaceId = z
  .uuid()
  .optional()
  .describe('Must name a workspace the caller belongs to; defaults to the caller’s.');
const blankToUndefined = (value: unknown) => (typeof value === 'string' && value.trim() === '' ? undefined : value);

/** knowledge-graph-service-api.md §2.1: a node type used as a filter. */
export const NodeTypeFilter = z
  .string()
  .max(LIMITS.typeLength)
  .regex(/^[a-z_][a-z0-9_.:-]*$/, 'Invalid node type');
/** knowledge-graph-service-api.md §2.2: an edge type used as a filter. */
export const EdgeTypeFilter = z
  .string()
  .max(LIMITS.typeLength)
  .regex(/^[A-Za-z_][A-Za-z0-9_.:-]*$/, 'Invalid edge type');

const limit = z.coerce.number().int().min(1).max(LIMITS.list.maxLimit).default(LIMITS.list.defaultLimit);
const offset = z.coerce.number().int().min(0).max(LIMITS.list.maxOffset).default(0);
const properties = z.record(z.string(), z.unknown());

/** Every field of knowledge-graph-service-api.md §2.1 except the raw vector; `embedding` only on request. */
export const NodeResponse = z
  .object({
    id: z.uuid(),
    workspace_id: z.uuid(),
    type: z.string(),
    name: z.string(),
    properties,
    importance_score: z.number().min(0).max(1),
    base_salience: z.number(),
    reference_count: z.number().int(),
    connection_id: z.uuid().nullable(),
    has_embedding: z.boolean(),
    embedding: z.array(z.number()).optional().describe('Only with ?include_embedding=true on GET by id.'),
    last_touch_at: timestamp,
    created_at: timestamp,
    updated_at: timestamp,
    is_deleted: z.boolean(),
  })
  .meta({ id: 'NodeResponse' });
export type NodeResponse = z.input<typeof NodeResponse>;

export const EdgeResponse = z
  .object({
    id: z.uuid(),
    workspace_id: z.uuid(),
    type: z.string(),
    source_node_id: z.uuid(),
    target_node_id: z.uuid(),
    properties,
    reasoning: z.string().nullable(),
    evidence: z.string().nullable(),
    created_at: timestamp.describe('When Weft learnt the fact.'),
    is_deleted: z.boolean(),
    valid_from: timestamp.describe('When the fact began to hold (defaults to when it was written).'),
    valid_to: timestamp
      .nullable()
      .describe('When the fact stopped holding (a contradicting update closes it); null while it holds.'),
  })
  .meta({ id: 'EdgeResponse' });
export type EdgeResponse = z.input<typeof EdgeResponse>;

// ---- requests ----

export const NodeCreateRequest = z
  .object({
    type: z
      .string()
      .trim()
      .min(1)
      .max(LIMITS.typeLength)
      .regex(/^[a-z_][a-z0-9_.:-]*$/, 'Node types are lower-case identifiers'),
    name: z.string().trim().min(1).max(LIMITS.nodeNameLength),
    properties: properties.optional(),
    connection_id: z.uuid().nullable().optional(),
    base_salience: z.number().min(0).max(1).optional().describe('Defaults to the per-type salience table.'),
  })
  .meta({ id: 'NodeCreateRequest' });
export type NodeCreateRequest = z.infer<typeof NodeCreateRequest>;

export const NodePatchRequest = z
  .strictObject({
    name: z.string().trim().min(1).max(LIMITS.nodeNameLength).optional(),
    properties: properties.optional().describe('Merged into the stored properties; a null value removes a key.'),
    type: z
      .string()
      .trim()
      .min(1)
      .max(LIMITS.typeLength)
      .regex(/^[a-z_][a-z0-9_.:-]*$/, 'Node types are lower-case identifiers')
      .optional(),
  })
  .refine((body) => body.name !== undefined || body.properties !== undefined || body.type !== undefined, {
    message: 'Give at least one of name, properties, type',
  })
  .meta({ id: 'NodePatchRequest' });
export type NodePatchRequest = z.infer<typeof NodePatchRequest>;

export const EdgeCreateRequest = z
  .object({
    type: z
      .string()
      .trim()
      .min(1)
      .max(LIMITS.typeLength)
      .regex(/^[A-Za-z_][A-Za-z0-9_.:-]*$/, 'Invalid edge type'),
    source_node_id: z.uuid(),
    target_node_id: z.uuid(),
    properties: properties.optional(),
    reasoning: z.string().max(LIMITS.edgeTextLength).nullable().optional(),
    evidence: z.string().max(LIMITS.edgeTextLength).nullable().optional(),
    valid_from: timestamp
      .nullable()
      .optional()
      .describe('When the fact began to hold; defaults to now (or to valid_to, when that is earlier).'),
    valid_to: timestamp.nullable().optional().describe('When it stopped holding; absent or null while it holds.'),
  })
  .refine((body) => !body.valid_to || !body.valid_from || Date.parse(body.valid_to) >= Date.parse(body.valid_from), {
    message: 'valid_to must not be before valid_from',
    path: ['valid_to'],
  })
  .meta({ id: 'EdgeCreateRequest' });
export type EdgeCreateRequest = z.infer<typeof EdgeCreateRequest>;

export const NodeIdParams = z.object({ node_id: z.uuid() });
export const EdgeIdParams = z.object({ edge_id: z.uuid() });

/** A past instant for `as_of` and the diff's bounds (issue 31): ISO 8601 with an offset, millisecond precision. */
export const AsOf = timestamp.describe(
  'Answer as the graph stood at this instant (ISO 8601 with an offset; a change within its millisecond counts ' +
    'as before it). 422 before the version retention horizon.',
);

export const NodeGetQuery = z.object({
  workspace_id: workspaceId,
  include_embedding: z
    .enum(['true', 'false'])
    .default('false')
    .transform((value) => value === 'true'),
  as_of: AsOf.optional(),
});
export const WorkspaceQuery = z.object({ workspace_id: workspaceId });

export const NodeListQuery = z.object({
  type: NodeTypeFilter.optional(),
  connection_id: z.uuid().optional(),
  workspace_id: workspaceId,
  limit,
  offset,
});
export type NodeListQuery = z.infer<typeof NodeListQuery>;

export const NodeDeleteByTypeQuery = z.object({
  // Missing or blank is the contract's 400, so it is not a schema error here.
  type: z.preprocess(blankToUndefined, z.string().trim().max(LIMITS.typeLength).optional()),
  workspace_id: workspaceId,
});

export const DeleteNodesByTypeResponse = z
  .object({ type: z.string(), nodes_deleted: z.number().int(), edges_deleted: z.number().int() })
  .meta({ id: 'DeleteNodesByTypeResponse' });

export const TypeaheadQuery = z.object({
  q: z.preprocess(blankToUndefined, z.string().max(LIMITS.queryLength).optional()),
  type: NodeTypeFilter.optional(),
  workspace_id: workspaceId,
  limit: z.coerce.number().int().min(LIMITS.typeahead.min).max(LIMITS.typeahead.max).default(LIMITS.typeahead.default),
});
export type TypeaheadQuery = z.infer<typeof TypeaheadQuery>;

export const EdgeListQuery = z.object({
  source_node_id: z.uuid().optional(),
  target_node_id: z.uuid().optional(),
  type: EdgeTypeFilter.optional(),
  workspace_id: workspaceId,
  limit,
  offset,
});
export type EdgeListQuery = z.infer<typeof EdgeListQuery>;
