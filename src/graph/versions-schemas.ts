import { z } from 'zod';
import { LIMITS } from '../rules/limits';
import { AsOf } from './schemas';

const timestamp = z.iso.datetime({ offset: true });
const workspace_id = z
  .uuid()
  .optional()
  .describe('Must name a workspace the caller belongs to; defaults to the caller’s.');
const limit = z.coerce.number().int().min(1).max(LIMITS.list.maxLimit).default(LIMITS.list.defaultLimit);
const cursor = z.string().max(200).optional().describe('`next_cursor` of the previous page.');
const state = z
  .record(z.string(), z.unknown())
  .nullable()
  .describe('The changed fields only (a create: every versioned field; a purge: the whole row).');

/** One change of a node or an edge (issue 31): who, through what, when, and the changed fields. */
export const GraphVersion = z
  .object({
    version_id: z.string().describe('Increasing within the graph: later changes have larger ids.'),
    entity_kind: z.enum(['node', 'edge']),
    entity_id: z.uuid(),
    operation: z
      .enum(['create', 'update', 'delete', 'restore', 'purge'])
      .describe('What happened to the row: soft delete is `delete`, a hard delete `purge`.'),
    label: z
      .string()
      .nullable()
      .describe('Why, when the writer said: `merge`, `unmerge`, `contradiction` (a closed validity), …'),
    changed_at: timestamp.describe('When Weft learnt the change (its transaction’s time).'),
    actor: z
      .object({
        user_id: z.uuid().nullable(),
        credential_kind: z.string().nullable().describe('`user_jwt`, `api_key` or `mcp_token`, when known.'),
        credential_id: z.string().nullable(),
        run_id: z.string().nullable().describe('The run whose step wrote it.'),
        prompt_id: z.string().nullable().describe('The prompt (its correlation id) whose extraction wrote it.'),
        capability: z.string().nullable().describe('The capability that wrote it.'),
        capability_call: z.string().nullable().describe('That call’s Idempotency-Key.'),
      })
      .describe('Who made the change and through what; null where it was not known.'),
    before: state,
    after: state,
  })
  .meta({ id: 'GraphVersion' });
export type GraphVersion = z.input<typeof GraphVersion>;

export const NodeHistoryQuery = z.object({ workspace_id, limit, cursor });
export type NodeHistoryQuery = z.infer<typeof NodeHistoryQuery>;

export const NodeHistoryResponse = z
  .object({
    node_id: z.uuid(),
    versions: z.array(GraphVersion).describe('Newest first.'),
    next_cursor: z.string().nullable().describe('Pass as `cursor` for the next (older) page; null on the last.'),
    retention_horizon: timestamp.describe('Versions older than this have been purged.'),
  })
  .meta({ id: 'NodeHistoryResponse' });

export const GraphDiffQuery = z
  .object({
    workspace_id,
    from: AsOf,
    to: AsOf.optional().describe('Defaults to now.'),
    limit,
    cursor,
  })
  .refine((query) => query.to === undefined || Date.parse(query.to) >= Date.parse(query.from), {
    message: 'to must not be before from',
    path: ['to'],
  });
export type GraphDiffQuery = z.infer<typeof GraphDiffQuery>;

export const GraphDiffEntry = z
  .object({
    entity_kind: z.enum(['node', 'edge']),
    entity_id: z.uuid(),
    change: z.enum(['added', 'changed', 'removed']),
    changed_fields: z.array(z.string()).describe('The versioned fields that differ between `from` and `to`.'),
    before: z
      .record(z.string(), z.unknown())
      .nullable()
      .describe('The node or edge as it was at `from` (null when added).'),
    after: z
      .record(z.string(), z.unknown())
      .nullable()
      .describe('The node or edge as it is at `to` (null when removed).'),
  })
  .meta({ id: 'GraphDiffEntry' });
export type GraphDiffEntry = z.input<typeof GraphDiffEntry>;

export const GraphDiffResponse = z
  .object({
    from: timestamp,
    to: timestamp,
    changes: z.array(GraphDiffEntry).describe('Edges first, then nodes, each by id.'),
    next_cursor: z
      .string()
      .nullable()
      .describe('Pass as `cursor` for the next page; null on the last. A page may hold fewer than `limit`.'),
  })
  .meta({ id: 'GraphDiffResponse' });
export type GraphDiffResponse = z.input<typeof GraphDiffResponse>;
