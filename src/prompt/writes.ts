// The saga's write step beside its compensation: `writeRefined` and `undoWrites` share the undo
// journal (prompt_writes), so a change to what one writes is read next to what the other takes back.
import type { EntityManager } from 'typeorm';
import { withdrawChangeSetOfPrompt } from '../change-sets/repository';
import { findLiveNodeByName, reopenEdgesClosedBy, toEdgeResponse, toNodeResponse } from '../graph/repository';
import type { EdgeResponse, NodeResponse } from '../graph/schemas';
import {
  createNodeInTransaction,
  enqueueNodeCreated,
  normalizedName,
  touchNodes,
  writeExtractedEdge,
} from '../graph/writes';
import { readOntologyConfig } from '../ontology-config/service';
import type { Scope } from '../platform/db/unit-of-work';
import type { RefinedGraph } from './model/contract';
import {
  claimPromptWritesUndo,
  edgesInOrder,
  findPromptWrites,
  insertPromptWrites,
  liveNodes,
  nodesInOrder,
  referenceCounts,
  softDeleteEdges,
  softDeleteUntouchedNodes,
  takeBackReferences,
} from './repository';

export interface PersistedGraph {
  nodes: NodeResponse[];
  edges: EdgeResponse[];
  nodes_created: number;
  edges_created: number;
  /** A staged prompt's change-set: nothing was written (issue 31 part 4). */
  change_set_id?: string;
}

/** The sender of a prompt, as the graph's version rows record it. */
export interface PromptActor {
  userId: string;
  credentialKind: string;
  credentialId?: string;
}

/** A prompt's unit of work: its writes' versions name the prompt and, when known, its sender. */
export const promptScope = (workspaceId: string, correlationId: string, actor?: PromptActor): Scope => ({
  workspaceId,
  ...(actor ? { userId: actor.userId } : {}),
  actor: { promptId: correlationId, credentialKind: actor?.credentialKind, credentialId: actor?.credentialId },
});

/** The nodes and edges a prompt wrote or referenced, as the API shows them now, in the prompt's order. */
export async function loadWritten(m: EntityManager, nodeIds: string[], edgeIds: string[]) {
  const nodes = await nodesInOrder(m, nodeIds);
  const edges = await edgesInOrder(m, edgeIds);
  return { nodes: nodes.map(toNodeResponse), edges: edges.map(toEdgeResponse) };
}

/**
 * Writes the refined graph in the caller's transaction: an existing live node of the same type and
 * normalised name is referenced instead of duplicated; edges reference both ends. Exactly once per
 * correlation id: a repeat returns what the first run wrote.
 */
export async function writeRefined(
  m: EntityManager,
  workspaceId: string,
  correlationId: string,
  refined: RefinedGraph,
): Promise<PersistedGraph> {
  const earlier = await findPromptWrites(m, workspaceId, correlationId);
  if (earlier) {
    const written = await loadWritten(m, earlier.nodeIds, earlier.edgeIds);
    const createdBefore = earlier.nodeIds.filter((id) => !(id in earlier.referenceDeltas));
    return { ...written, nodes_created: createdBefore.length, edges_created: earlier.edgeIds.length };
  }
  const { importance } = await readOntologyConfig(m);
  const options = { importance };
  const idByRef = new Map<string, string>();
  // One node per (type, normalised name) within the prompt too: the model may name it twice.
  const idByKey = new Map<string, string>();
  const created: string[] = [];
  const referenced: string[] = [];
  for (const node of refined.nodes) {
    const key = `${node.type}\u0000${normalizedName(node.name)}`;
    let id = idByKey.get(key);
    if (!id) {
      const existing = await findLiveNodeByName(m, node.type, normalizedName(node.name));
      if (existing) {
        id = existing.id;
        referenced.push(id);
      } else {
        // node.created waits for the prompt to complete (`complete`): an undone prompt's nodes
        // are never embedded or resolved, so a refunded prompt pays for nothing.
        const row = await createNodeInTransaction(
          m,
          workspaceId,
          { type: node.type, name: node.name, properties: node.properties },
          { ...options, emitCreated: false },
        );
        id = row.id;
        created.push(id);
      }
      idByKey.set(key, id);
    }
    idByRef.set(node.ref, id);
  }
  await touchNodes(m, referenced, options);
  const edgeIds: string[] = [];
  const deltas: Record<string, number> = Object.fromEntries(referenced.map((id) => [id, 1]));
  for (const edge of refined.edges) {
    const source = idByRef.get(edge.source_ref);
    const target = idByRef.get(edge.target_ref);
    if (!source || !target) continue; // the model named a ref it did not define: skip the edge
    // A fact already in the graph is a reference of its ends, not a second edge; a new employer
    // closes the old one's validity rather than deleting it (issue 31).
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
      options,
    );
    if (row) edgeIds.push(row.id);
    for (const end of [source, target]) if (!created.includes(end)) deltas[end] = (deltas[end] ?? 0) + 1;
  }
  await insertPromptWrites(m, {
    workspaceId,
    correlationId,
    nodeIds: [...created, ...referenced],
    edgeIds,
    referenceDeltas: deltas,
    createdReferences: await referenceCounts(m, created),
  });
  const written = await loadWritten(m, [...created, ...referenced], edgeIds);
  return { ...written, nodes_created: created.length, edges_created: edgeIds.length };
}

/**
 * The compensation of `writeRefined`, in the caller's transaction: only what this prompt wrote. Its
 * own edges go; a node it created goes unless someone else has referenced, connected or edited it
 * since (then it stays, less the references the prompt's own edges gave it); the references it
 * added to older nodes are taken back. False when there was nothing (left) to undo.
 */
export async function undoWrites(m: EntityManager, correlationId: string): Promise<boolean> {
  // A staged prompt wrote nothing: its pending change-set is withdrawn instead.
  if (await withdrawChangeSetOfPrompt(m, correlationId)) return true;
  const written = await claimPromptWritesUndo(m, correlationId);
  if (!written) return false;
  const created = written.node_ids.filter((id) => !(id in written.reference_deltas));
  await softDeleteEdges(m, written.edge_ids);
  // The facts its contradictions closed hold again.
  await reopenEdgesClosedBy(m, correlationId);
  // Rows written before created_references existed have no count: then only edges and edits count.
  const leftBy = Object.fromEntries(created.map((id) => [id, written.created_references[id] ?? null]));
  const deleted = new Set(await softDeleteUntouchedNodes(m, leftBy, correlationId));
  const takeBack = { ...written.reference_deltas };
  for (const id of created) if (!deleted.has(id)) takeBack[id] = written.created_references[id] ?? 0;
  await takeBackReferences(m, takeBack);
  return true;
}

/** `node.created` for the live nodes the prompt created; how many were emitted. */
export async function emitNodesCreated(m: EntityManager, workspaceId: string, correlationId: string): Promise<number> {
  const writes = await findPromptWrites(m, workspaceId, correlationId);
  if (!writes || writes.undoneAt) return 0;
  const nodes = await liveNodes(
    m,
    writes.nodeIds.filter((id) => !(id in writes.referenceDeltas)),
  );
  for (const node of nodes) await enqueueNodeCreated(m, workspaceId, node);
  return nodes.length;
}
