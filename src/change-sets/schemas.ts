import { z } from 'zod';
import type { ChangeSetStatus } from '../approvals/schemas';
import { CHANGE_SET_STATUSES, ChangeSetApplied, ChangeSetConflict } from '../approvals/schemas';
import { LIMITS } from '../rules/limits';

const timestamp = z.iso.datetime({ offset: true });
const properties = z.record(z.string(), z.unknown());

/** A change-set's status as its approval shows it. */
export const APPROVAL_STATUS_OF: Record<ChangeSetStatus, 'pending' | 'approved' | 'rejected' | 'cancelled'> = {
  pending: 'pending',
  applied: 'approved',
  conflicted: 'approved',
  rejected: 'rejected',
  withdrawn: 'cancelled',
};

/** A node the change-set creates (`node_id` null) or references (an existing node's id, seen at staging). */
export const ProposedNode = z.object({
  ref: z.string().describe('The node’s name inside the change-set, which edges and property changes use.'),
  node_id: z.uuid().nullable().describe('The existing node it references; null: a node to create.'),
  type: z.string(),
  name: z.string(),
  properties: properties.describe('A new node’s properties; empty for a referenced one.'),
});
export type ProposedNode = z.infer<typeof ProposedNode>;

export const ProposedEdge = z.object({
  type: z.string(),
  source_ref: z.string(),
  target_ref: z.string(),
  reasoning: z.string().nullable(),
  evidence: z.string().nullable().describe('The text the fact was read from.'),
});
export type ProposedEdge = z.infer<typeof ProposedEdge>;

/** A property of an existing node set to `after`; `before` is what it was at staging (null: absent). */
export const PropertyChange = z.object({
  node_ref: z.string(),
  node_id: z.uuid(),
  key: z.string(),
  before: z.unknown().describe('The value when the change-set was staged; null when the key was absent.'),
  after: z.unknown(),
});
export type PropertyChange = z.infer<typeof PropertyChange>;

/** A soft delete (`ontology.forget`): a node with every edge touching it, or an edge; `label` as seen at staging. */
export const ProposedDeletion = z.object({
  kind: z.enum(['node', 'edge']),
  id: z.uuid(),
  label: z.string().describe('What it was at staging: a node’s name and type, an edge’s type and ends.'),
});
export type ProposedDeletion = z.infer<typeof ProposedDeletion>;

export const ChangeSetOperations = z
  .object({
    nodes: z.array(ProposedNode),
    edges: z.array(ProposedEdge),
    property_changes: z.array(PropertyChange),
    deletions: z
      .array(ProposedDeletion)
      .optional()
      .describe('Soft deletes, applied after the writes; absent in change-sets staged before deletions.'),
  })
  .meta({ id: 'ChangeSetOperations' });
export type ChangeSetOperations = z.infer<typeof ChangeSetOperations>;

const credential = z.object({
  kind: z.enum(['user_jwt', 'api_key', 'mcp_token']),
  id: z.string().nullable().describe('The API key’s or MCP token’s id, or the user JWT’s `jti`.'),
});

/** What the change-set would do to the graph as it is now: the diff a reviewer reads. */
export const ChangeSetPreview = z
  .object({
    nodes: z.array(
      z.object({
        ref: z.string(),
        action: z
          .enum(['create', 'reference', 'missing'])
          .describe(
            '`create`: a node to create; `reference`: an existing live node (one of the same type and name ' +
              'made since staging counts); `missing`: the node it references is gone (a conflict).',
          ),
        node_id: z.uuid().nullable(),
        type: z.string(),
        name: z.string(),
        properties,
      }),
    ),
    edges: z.array(
      z.object({
        type: z.string(),
        source: z.string().describe('The source node’s name.'),
        target: z.string(),
        action: z.enum(['create', 'exists']).describe('`exists`: the fact is already in the graph (a reference).'),
        reasoning: z.string().nullable(),
        evidence: z.string().nullable(),
      }),
    ),
    property_changes: z.array(
      z.object({
        node_id: z.uuid(),
        name: z.string(),
        key: z.string(),
        before: z.unknown(),
        now: z.unknown().describe('The value in the graph now.'),
        after: z.unknown(),
        stale: z.boolean().describe('`now` differs from `before`: applying would report a conflict.'),
      }),
    ),
    deletions: z
      .array(ProposedDeletion.extend({ live: z.boolean().describe('false: already gone (a conflict).') }))
      .describe('What it would delete.'),
    conflicts: z.array(ChangeSetConflict).describe('What an apply now would report (and write nothing).'),
  })
  .meta({ id: 'ChangeSetPreview' });
export type ChangeSetPreview = z.infer<typeof ChangeSetPreview>;

export const ChangeSetRow = z
  .object({
    change_set_id: z.uuid(),
    approval_id: z.uuid().describe('Resolve it with `POST /v1/approvals/{approval_id}/resolve`.'),
    status: z.enum(CHANGE_SET_STATUSES),
    source: z.object({
      kind: z.enum(['prompt', 'capability']),
      prompt_id: z.uuid().nullable().describe('The update prompt’s correlation id.'),
      capability: z.string().nullable(),
      call: z.string().nullable().describe('The capability call’s Idempotency-Key.'),
    }),
    operations: ChangeSetOperations,
    staged_by: z.uuid(),
    staged_by_credential: credential,
    resolved_by: z.uuid().nullable(),
    resolved_by_credential: credential.nullable(),
    notes: z.string().nullable(),
    conflicts: z.array(ChangeSetConflict).nullable().describe('What the apply found changed (status conflicted).'),
    applied: ChangeSetApplied,
    created_at: timestamp,
    resolved_at: timestamp.nullable(),
  })
  .meta({ id: 'ChangeSet' });
export type ChangeSetRow = z.input<typeof ChangeSetRow>;

export const ChangeSetDetail = ChangeSetRow.extend({
  preview: ChangeSetPreview.nullable().describe('The diff against the graph now; null once resolved.'),
}).meta({ id: 'ChangeSetDetail' });

export const ChangeSetList = z.object({ change_sets: z.array(ChangeSetRow) }).meta({ id: 'ChangeSetList' });

export const ChangeSetListQuery = z.object({
  status: z.enum(CHANGE_SET_STATUSES).optional(),
  limit: z.coerce.number().int().min(1).max(LIMITS.changeSets.list.max).default(LIMITS.changeSets.list.default),
});
export type ChangeSetListQuery = z.output<typeof ChangeSetListQuery>;

export const ChangeSetIdParams = z.object({ change_set_id: z.uuid() });
