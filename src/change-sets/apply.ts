import type { EntityManager } from 'typeorm';
import type { ChangeSetConflict } from '../approvals/schemas';
import { nodeUpdated } from '../graph/events';
import { findLiveEdge, findLiveNodeByName, liveEdgeIds, softDeleteEdge, updateNode } from '../graph/repository';
import {
  createNodeInTransaction,
  normalizedName,
  removeNodeInTransaction,
  touchNodes,
  writeExtractedEdge,
} from '../graph/writes';
import { readOntologyConfig } from '../ontology-config/service';
import type { ChangeContext } from '../platform/db/unit-of-work';
import { setChangeContext } from '../platform/db/unit-of-work';
import { DomainError, NotFoundError } from '../platform/errors';
import { enqueueEvent } from '../platform/outbox/relay';
import type { ChangeSetRecord } from './repository';
import { liveNodesWithProperties } from './repository';
import type { ChangeSetOperations, ChangeSetPreview } from './schemas';
import { sameValue } from './staging';

const conflict = (fields: Partial<ChangeSetConflict> & Pick<ChangeSetConflict, 'kind' | 'message'>) => ({
  ref: null,
  node_id: null,
  key: null,
  before: null,
  now: null,
  ...fields,
});

/** Each ref as the graph is now: an existing node's id, a node to create, or a referenced node that is gone. */
type Resolved = { action: 'reference'; id: string; name: string } | { action: 'create' } | { action: 'missing' };

interface Plan {
  refs: Map<string, Resolved>;
  current: Map<string, { name: string; properties: Record<string, unknown> }>;
  /** The deletions' targets still live. */
  deletable: Set<string>;
  conflicts: ChangeSetConflict[];
}

/**
 * Re-validates the operations against the graph as it is now (issue 31 part 4): a referenced node
 * deleted since staging, or a property whose value is no longer its `before`, is a conflict. A node
 * to create whose type and name now exist is referenced instead, as a prompt would. With `lock`
 * the referenced nodes are locked until the caller's transaction ends, so nothing changes them
 * between this check and the writes.
 */
async function plan(m: EntityManager, ops: ChangeSetOperations, lock: boolean): Promise<Plan> {
  const staged = ops.nodes.flatMap((node) => (node.node_id ? [node.node_id] : []));
  const changed = ops.property_changes.map((change) => change.node_id);
  const deletions = ops.deletions ?? [];
  const doomed = deletions.flatMap((deletion) => (deletion.kind === 'node' ? [deletion.id] : []));
  const rows = await liveNodesWithProperties(m, [...new Set([...staged, ...changed, ...doomed])], lock);
  const current = new Map(rows.map((row) => [row.id, { name: row.name, properties: row.properties }]));
  const refs = new Map<string, Resolved>();
  const conflicts: ChangeSetConflict[] = [];
  for (const node of ops.nodes) {
    if (node.node_id) {
      const live = current.get(node.node_id);
      if (live) refs.set(node.ref, { action: 'reference', id: node.node_id, name: live.name });
      else {
        refs.set(node.ref, { action: 'missing' });
        conflicts.push(
          conflict({
            kind: 'node_deleted',
            ref: node.ref,
            node_id: node.node_id,
            message: `The node ${node.name} (${node.type}) was deleted since the change-set was staged`,
          }),
        );
      }
      continue;
    }
    const existing = await findLiveNodeByName(m, node.type, normalizedName(node.name));
    refs.set(node.ref, existing ? { action: 'reference', id: existing.id, name: node.name } : { action: 'create' });
  }
  for (const change of ops.property_changes) {
    const live = current.get(change.node_id);
    if (!live) {
      if (!conflicts.some((found) => found.node_id === change.node_id)) {
        conflicts.push(
          conflict({
            kind: 'node_deleted',
            ref: change.node_ref,
            node_id: change.node_id,
            message: 'The node whose property it changes was deleted since the change-set was staged',
          }),
        );
      }
      continue;
    }
    const now = live.properties[change.key] ?? null;
    if (!sameValue(now, change.before)) {
      conflicts.push(
        conflict({
          kind: 'property_changed',
          ref: change.node_ref,
          node_id: change.node_id,
          key: change.key,
          before: change.before ?? null,
          now,
          message: `The property ${change.key} of ${live.name} changed since the change-set was staged`,
        }),
      );
    }
  }
  const edges = deletions.flatMap((deletion) => (deletion.kind === 'edge' ? [deletion.id] : []));
  const deletable = new Set([...doomed.filter((id) => current.has(id)), ...(await liveEdgeIds(m, edges, lock))]);
  for (const deletion of deletions) {
    if (deletable.has(deletion.id)) continue;
    conflicts.push(
      conflict({
        kind: deletion.kind === 'node' ? 'node_deleted' : 'edge_deleted',
        node_id: deletion.kind === 'node' ? deletion.id : null,
        message: `${deletion.label} was deleted since the change-set was staged`,
      }),
    );
  }
  return { refs, current, deletable, conflicts };
}

/** The diff a reviewer reads: what applying now would create, reference and change, and its conflicts. */
export async function previewChangeSet(m: EntityManager, ops: ChangeSetOperations): Promise<ChangeSetPreview> {
  const { refs, current, deletable, conflicts } = await plan(m, ops, false);
  const nameOf = (ref: string) => ops.nodes.find((node) => node.ref === ref)?.name ?? ref;
  const edges = [];
  for (const edge of ops.edges) {
    const source = refs.get(edge.source_ref);
    const target = refs.get(edge.target_ref);
    const exists =
      source?.action === 'reference' &&
      target?.action === 'reference' &&
      (await findLiveEdge(m, edge.type, source.id, target.id)) !== undefined;
    edges.push({
      type: edge.type,
      source: nameOf(edge.source_ref),
      target: nameOf(edge.target_ref),
      action: exists ? ('exists' as const) : ('create' as const),
      reasoning: edge.reasoning,
      evidence: edge.evidence,
    });
  }
  return {
    nodes: ops.nodes.map((node) => {
      const resolved = refs.get(node.ref);
      return {
        ref: node.ref,
        action: resolved?.action ?? 'missing',
        node_id: resolved?.action === 'reference' ? resolved.id : null,
        type: node.type,
        name: node.name,
        properties: node.properties,
      };
    }),
    edges,
    property_changes: ops.property_changes.map((change) => {
      const live = current.get(change.node_id);
      const now = live ? (live.properties[change.key] ?? null) : null;
      return {
        node_id: change.node_id,
        name: live?.name ?? nameOf(change.node_ref),
        key: change.key,
        before: change.before ?? null,
        now,
        after: change.after,
        stale: !live || !sameValue(now, change.before),
      };
    }),
    deletions: (ops.deletions ?? []).map((deletion) => ({ ...deletion, live: deletable.has(deletion.id) })),
    conflicts,
  };
}

export type ApplyOutcome =
  | { status: 'applied'; applied: { node_ids: string[]; edge_ids: string[] }; created: number }
  | { status: 'conflicted'; conflicts: ChangeSetConflict[] };

/**
 * Applies a change-set all or nothing, in the caller's transaction: re-validated first (conflicts:
 * nothing written), then every write under a savepoint, so a write the graph refuses (an edge end
 * gone, a claim conflict) rolls the others back and is reported as a conflict too. The writes'
 * version rows carry the label 'change_set', the source prompt or call, and the transaction's
 * user and credential: the reviewer who approved.
 */
/** The apply's outcome when the credential that staged the change-set may no longer act: nothing written. */
export const stagerRevoked = (): ApplyOutcome => ({
  status: 'conflicted',
  conflicts: [
    conflict({
      kind: 'credential_revoked',
      message:
        'The credential that staged this change-set was revoked or has expired, or its user left the workspace: ' +
        'nothing was applied',
    }),
  ],
});

export async function applyChangeSet(m: EntityManager, changeSet: ChangeSetRecord): Promise<ApplyOutcome> {
  const ops = changeSet.operations;
  const { refs, conflicts } = await plan(m, ops, true);
  if (conflicts.length > 0) return { status: 'conflicted', conflicts };
  const label: ChangeContext = {
    op: 'change_set',
    ...(changeSet.source_prompt_id ? { promptId: changeSet.source_prompt_id } : {}),
    ...(changeSet.source_capability ? { capability: changeSet.source_capability } : {}),
    ...(changeSet.source_call ? { capabilityCall: changeSet.source_call } : {}),
  };
  await m.query('SAVEPOINT change_set_apply');
  try {
    const written = await write(m, changeSet.workspace_id, ops, refs, label);
    await m.query('RELEASE SAVEPOINT change_set_apply');
    await setChangeContext(m, { op: '' });
    return { status: 'applied', ...written };
  } catch (error) {
    if (!(error instanceof DomainError)) throw error;
    await m.query('ROLLBACK TO SAVEPOINT change_set_apply');
    return {
      status: 'conflicted',
      conflicts: [conflict({ kind: 'refused', message: `The graph refused a write: ${error.message}` })],
    };
  }
}

async function write(
  m: EntityManager,
  workspaceId: string,
  ops: ChangeSetOperations,
  refs: Map<string, Resolved>,
  label: ChangeContext,
) {
  await setChangeContext(m, label);
  const { importance } = await readOntologyConfig(m);
  const idOf = new Map<string, string>();
  const referenced: string[] = [];
  let created = 0;
  for (const node of ops.nodes) {
    const resolved = refs.get(node.ref)!;
    if (resolved.action === 'reference') {
      idOf.set(node.ref, resolved.id);
      referenced.push(resolved.id);
      continue;
    }
    const row = await createNodeInTransaction(
      m,
      workspaceId,
      { type: node.type, name: node.name, properties: node.properties },
      { importance },
    );
    idOf.set(node.ref, row.id);
    created += 1;
  }
  await touchNodes(m, referenced, { importance });
  const byNode = new Map<string, Record<string, unknown>>();
  for (const change of ops.property_changes) {
    byNode.set(change.node_id, { ...byNode.get(change.node_id), [change.key]: change.after ?? null });
  }
  for (const [nodeId, values] of byNode) {
    await updateNode(m, nodeId, {
      name: null,
      type: null,
      properties: values,
      removedKeys: Object.keys(values).filter((key) => values[key] === null),
    });
    await enqueueEvent(m, nodeUpdated, {
      workspaceId,
      aggregateId: nodeId,
      payload: { node_id: nodeId, name_changed: false },
    });
  }
  const edgeIds: string[] = [];
  for (const edge of ops.edges) {
    const source = idOf.get(edge.source_ref);
    const target = idOf.get(edge.target_ref);
    if (!source || !target) continue;
    const row = await writeExtractedEdge(
      m,
      workspaceId,
      {
        type: edge.type,
        source_node_id: source,
        target_node_id: target,
        reasoning: edge.reasoning,
        evidence: edge.evidence,
      },
      { importance },
    );
    if (!row) continue;
    edgeIds.push(row.id);
    // A new employer closes the old one's validity, as a direct write does; the closing clears the label.
    await setChangeContext(m, label);
  }
  // Last, so a change-set's own new edges to a node it deletes go with it, as DELETE would take them.
  for (const deletion of ops.deletions ?? []) {
    if (deletion.kind === 'node') await removeNodeInTransaction(m, deletion.id);
    else if (!(await softDeleteEdge(m, deletion.id))) throw new NotFoundError('Edge not found');
  }
  return { applied: { node_ids: [...new Set(idOf.values())], edge_ids: edgeIds }, created };
}
