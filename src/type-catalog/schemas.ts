import { z } from 'zod';
import { LIMITS } from '../rules/limits';

/** knowledge-graph-service-api.md §2.3. */
export const TypeCatalogRow = z
  .object({
    name: z.string(),
    kind: z.enum(['node', 'edge']),
    display_name: z.string().nullable(),
    description: z.string().nullable(),
    row_count: z.number().int().describe('Live rows of this type, as of the last daily recompute.'),
    last_seen_at: z.iso.datetime({ offset: true }).nullable(),
    common_property_keys: z
      .array(z.string())
      .describe(`Most frequent property keys, top ${LIMITS.commonPropertyKeys}.`),
    properties: z.record(z.string(), z.unknown()).nullable(),
    created_at: z.iso.datetime({ offset: true }),
    updated_at: z.iso.datetime({ offset: true }),
  })
  .meta({ id: 'TypeCatalogRow' });
export type TypeCatalogRow = z.input<typeof TypeCatalogRow>;

export const TypeListQuery = z.object({ workspace_id: z.uuid().optional(), kind: z.enum(['node', 'edge']).optional() });
export const TypeNameParams = z.object({ name: z.string().min(1).max(LIMITS.typeLength) });
export const TypeGetQuery = z.object({
  workspace_id: z.uuid().optional(),
  kind: z
    .enum(['node', 'edge'])
    .optional()
    .describe('When a node type and an edge type share the name; node first by default.'),
});
