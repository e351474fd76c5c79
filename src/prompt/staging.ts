// A staged prompt (issue 31 part 4) writes nothing: what `writeRefined` would write becomes a
// change-set's operations, applied only once a reviewer approves it.
import type { EntityManager } from 'typeorm';
import { findChangeSetOfPrompt, liveNodesWithProperties } from '../change-sets/repository';
import type { ChangeSetOperations } from '../change-sets/schemas';
import { sameValue, stageChangeSet } from '../change-sets/staging';
import { findLiveNodeByName } from '../graph/repository';
import { normalizedName } from '../graph/writes';
import type { RefinedGraph } from './model/contract';
import type { PersistedGraph, PromptActor } from './writes';

/** Stages the refined graph as a change-set, in the caller's transaction; exactly once per correlation id. */
export async function stageRefined(
  m: EntityManager,
  workspaceId: string,
  correlationId: string,
  refined: RefinedGraph,
  actor: PromptActor,
): Promise<PersistedGraph> {
  const earlier = await findChangeSetOfPrompt(m, correlationId);
  const staged =
    earlier?.id ??
    (
      await stageChangeSet(
        m,
        { workspaceId, userId: actor.userId, credential: { kind: actor.credentialKind, id: actor.credentialId } },
        { kind: 'prompt', promptId: correlationId },
        await proposeRefined(m, refined),
      )
    ).change_set_id;
  return { nodes: [], edges: [], nodes_created: 0, edges_created: 0, change_set_id: staged };
}

/**
 * What `writeRefined` would write, as a change-set's operations: one node per type and normalised
 * name, an existing live node referenced (with a property change for each value the prompt gives
 * that differs from the node's, `before` being the node's value now), edges between refs.
 */
async function proposeRefined(m: EntityManager, refined: RefinedGraph): Promise<ChangeSetOperations> {
  const nodes: ChangeSetOperations['nodes'] = [];
  const propertyChanges: ChangeSetOperations['property_changes'] = [];
  const refOf = new Map<string, string>();
  const refByKey = new Map<string, string>();
  for (const node of refined.nodes) {
    const key = `${node.type}\u0000${normalizedName(node.name)}`;
    const known = refByKey.get(key);
    if (known) {
      refOf.set(node.ref, known);
      continue;
    }
    refByKey.set(key, node.ref);
    refOf.set(node.ref, node.ref);
    const existing = await findLiveNodeByName(m, node.type, normalizedName(node.name));
    if (!existing) {
      nodes.push({ ref: node.ref, node_id: null, type: node.type, name: node.name, properties: node.properties });
      continue;
    }
    nodes.push({ ref: node.ref, node_id: existing.id, type: node.type, name: node.name, properties: {} });
    const [current] = await liveNodesWithProperties(m, [existing.id], false);
    for (const [name, after] of Object.entries(node.properties)) {
      const before = current?.properties[name] ?? null;
      if (!sameValue(before, after)) {
        propertyChanges.push({ node_ref: node.ref, node_id: existing.id, key: name, before, after });
      }
    }
  }
  const edges = refined.edges.flatMap((edge) => {
    const source = refOf.get(edge.source_ref);
    const target = refOf.get(edge.target_ref);
    if (!source || !target) return []; // the model named a ref it did not define, as writeRefined skips it
    return [
      { type: edge.type, source_ref: source, target_ref: target, reasoning: edge.reasoning, evidence: edge.evidence },
    ];
  });
  return { nodes, edges, property_changes: propertyChanges };
}
