import type { EntityManager } from 'typeorm';
import { baseSalienceFor } from '../importance/salience';
import type { ImportanceSettings } from '../ontology-config/schemas';
import { readOntologyConfig } from '../ontology-config/service';
import { setChangeContext } from '../platform/db/unit-of-work';
import { NotFoundError } from '../platform/errors';
import { enqueueEvent } from '../platform/outbox/relay';
import { isFunctionalEdgeType } from '../rules/graph';
import { registerType } from '../type-catalog/service';
import { guardEdgeWrite } from './edge-guards';
import { nodeCreated, nodeUpdated } from './events';
import type { EdgeRow, NodeRow } from './repository';
import {
  closeContradictedEdges,
  findLiveEdge,
  insertEdge,
  insertNode,
  lockLiveNode,
  softDeleteIncidentEdges,
  softDeleteNode,
  touchLiveNodes,
  updateNode,
} from './repository';

/*
 * The graph's write procedures, run inside a caller's unit of work: the node and edge services
 * use them, and so does the prompt pipeline's persist step, so every writer follows the same rules.
 */

export interface NodeCreateInput {
  type: string;
  name: string;
  properties?: Record<string, unknown>;
  connection_id?: string | null;
  /** Defaults to the per-type salience table. */
  base_salience?: number;
}

export interface EdgeCreateInput {
  type: string;
  source_node_id: string;
  target_node_id: string;
  properties?: Record<string, unknown>;
  reasoning?: string | null;
  evidence?: string | null;
  /** When the fact began to hold (ISO 8601); defaults to now. */
  valid_from?: string | null;
  /** When it stopped holding; null or absent while it holds. */
  valid_to?: string | null;
}

/** Callers creating many rows in one unit of work can pass the settings once. */
export interface WriteOptions {
  importance?: ImportanceSettings;
  /**
   * False when the caller emits `node.created` itself later (`enqueueNodeCreated`): a prompt emits
   * it when it completes, so the nodes of a prompt that is undone are never embedded or resolved.
   */
  emitCreated?: boolean;
}

const settingsOf = async (m: EntityManager, options?: WriteOptions) =>
  options?.importance ?? (await readOntologyConfig(m)).importance;

/**
 * Everything a node creation does, inside the caller's unit of work: base_salience from the
 * per-type table, the initial importance (the formula at age 0), catalog registration on first
 * sight, and `node.created` in the outbox. The caller kicks the outbox after its commit.
 */
export async function createNodeInTransaction(
  m: EntityManager,
  workspaceId: string,
  input: NodeCreateInput,
  options?: WriteOptions,
): Promise<NodeRow> {
  const settings = await settingsOf(m, options);
  const row = await insertNode(
    m,
    {
      workspaceId,
      type: input.type,
      name: input.name,
      properties: input.properties ?? {},
      connectionId: input.connection_id ?? null,
      baseSalience: input.base_salience ?? baseSalienceFor(input.type),
    },
    settings,
  );
  await registerType(m, workspaceId, 'node', input.type);
  if (options?.emitCreated !== false) await enqueueNodeCreated(m, workspaceId, row);
  return row;
}

/** What a node update may change: a new name or type, and properties merged (a null value removes a key). */
export interface NodePatchInput {
  name?: string;
  type?: string;
  properties?: Record<string, unknown>;
}

/**
 * A node's update, inside the caller's unit of work: the live row locked, the name or type changed
 * and the properties merged, a new type registered, and `node.updated` in the outbox (the caller
 * kicks it after its commit). 404 when the node is not live in the workspace.
 */
export async function patchNodeInTransaction(
  m: EntityManager,
  workspaceId: string,
  nodeId: string,
  input: NodePatchInput,
): Promise<NodeRow> {
  const current = await lockLiveNode(m, nodeId);
  if (!current) throw new NotFoundError('Node not found');
  const properties = input.properties ?? {};
  const updated = await updateNode(m, nodeId, {
    name: input.name ?? null,
    type: input.type ?? null,
    properties,
    removedKeys: Object.keys(properties).filter((key) => properties[key] === null),
  });
  // The row is locked above, so it is still there.
  if (!updated) throw new NotFoundError('Node not found');
  if (input.type !== undefined && input.type !== current.type) {
    await registerType(m, workspaceId, 'node', input.type);
  }
  await enqueueEvent(m, nodeUpdated, {
    workspaceId,
    aggregateId: nodeId,
    payload: { node_id: nodeId, name_changed: input.name !== undefined && input.name !== current.name },
  });
  return updated;
}

/** A node's soft delete and its incident edges', inside the caller's unit of work; 404 when it is not live. */
export async function removeNodeInTransaction(m: EntityManager, nodeId: string): Promise<NodeRow> {
  const deleted = await softDeleteNode(m, nodeId);
  if (!deleted) throw new NotFoundError('Node not found');
  await softDeleteIncidentEdges(m, [nodeId]);
  return deleted;
}

/** `node.created` in the outbox, in the caller's transaction; the caller kicks the outbox after its commit. */
export const enqueueNodeCreated = (
  m: EntityManager,
  workspaceId: string,
  node: { id: string; type: string; name: string },
): Promise<void> =>
  enqueueEvent(m, nodeCreated, {
    workspaceId,
    aggregateId: node.id,
    payload: { node_id: node.id, type: node.type, name: node.name },
  });

/**
 * Same type and the same name up to case and spacing: a reference, not a duplicate (a prompt's and a
 * change-set's extracted nodes; `findLiveNodeByName` looks the normalised name up).
 */
export const normalizedName = (name: string) => name.normalize('NFKC').trim().replace(/\s+/g, ' ').toLowerCase();

/** Deduplicated, lower-case (Postgres prints uuids so) and sorted: concurrent writers lock shared hubs in one order. */
const lockOrder = (nodeIds: readonly string[]) => [...new Set(nodeIds.map((id) => id.toLowerCase()))].sort();

async function touch(m: EntityManager, nodeIds: readonly string[], options?: WriteOptions): Promise<string[]> {
  const ids = lockOrder(nodeIds);
  if (ids.length === 0) return [];
  return touchLiveNodes(m, ids, await settingsOf(m, options));
}

/**
 * Counts one reference of each node (citations, edge ends): reference_count + 1, last_touch_at
 * = now(), and importance recomputed with the new values. Live nodes only; ids are deduplicated.
 * Returns how many nodes were touched.
 */
export async function touchNodes(
  m: EntityManager,
  nodeIds: readonly string[],
  options?: WriteOptions,
): Promise<number> {
  return (await touch(m, nodeIds, options)).length;
}

/**
 * Everything an edge creation does, inside the caller's unit of work: both ends must be live
 * nodes visible to this workspace (else 404), the other features' guards pass (edge-guards.ts),
 * catalog registration, and one reference of each end.
 */
export async function createEdgeInTransaction(
  m: EntityManager,
  workspaceId: string,
  input: EdgeCreateInput,
  options?: WriteOptions,
): Promise<EdgeRow> {
  const ends = [...new Set([input.source_node_id, input.target_node_id].map((id) => id.toLowerCase()))];
  // Touching first both counts the reference and locks the live ends, so a concurrent delete
  // cannot leave this edge pointing at a deleted node; a failure below rolls the touch back.
  const found = new Set(await touch(m, ends, options));
  const missing = ends.filter((id) => !found.has(id));
  if (missing.length > 0) throw new NotFoundError({ error: 'node_not_found', node_ids: missing });
  await guardEdgeWrite(m, workspaceId, input);
  const row = await insertEdge(m, {
    workspaceId,
    type: input.type,
    sourceNodeId: input.source_node_id,
    targetNodeId: input.target_node_id,
    properties: input.properties ?? {},
    reasoning: input.reasoning ?? null,
    evidence: input.evidence ?? null,
    validFrom: input.valid_from ?? null,
    validTo: input.valid_to ?? null,
  });
  await registerType(m, workspaceId, 'edge', input.type);
  return row;
}

/**
 * A new fact of a functional relation (src/rules/graph.ts) closes the validity of the source's
 * other current facts of that type instead of deleting them (issue 31 part 1); their version rows
 * carry the label 'contradiction'. Returns the closed edges' ids; none for another type.
 */
export async function closeContradictedFacts(m: EntityManager, edge: EdgeRow): Promise<string[]> {
  if (!isFunctionalEdgeType(edge.type)) return [];
  await setChangeContext(m, { op: 'contradiction' });
  const closed = await closeContradictedEdges(m, {
    type: edge.type,
    sourceId: edge.source_node_id,
    targetId: edge.target_node_id,
    exceptEdgeId: edge.id,
  });
  // The label is the closing's only: the rest of the transaction's writes go unlabelled again.
  await setChangeContext(m, { op: '' });
  return closed;
}

/**
 * An extracted fact (a prompt's edge, or a staged change-set's), inside the caller's unit of work: one
 * the graph holds already is a reference of its ends and answers null; else the edge is created, and a
 * new fact of a functional relation closes the facts it contradicts (their label cleared after).
 */
export async function writeExtractedEdge(
  m: EntityManager,
  workspaceId: string,
  input: EdgeCreateInput,
  options?: WriteOptions,
): Promise<EdgeRow | null> {
  if (await findLiveEdge(m, input.type, input.source_node_id, input.target_node_id)) {
    await touchNodes(m, [input.source_node_id, input.target_node_id], options);
    return null;
  }
  const row = await createEdgeInTransaction(m, workspaceId, input, options);
  await closeContradictedFacts(m, row);
  return row;
}
