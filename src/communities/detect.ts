/**
 * Community detection as a pure function (issue 30 part 3): Louvain (graphology-communities-louvain)
 * over the undirected, weighted graph of live nodes and edges, with a seeded random source so the
 * same graph always gives the same communities; then each community's members by importance, its
 * type mix, a name and a summary. The summary is an extract (the local model's summary): what the
 * members are and the most important of them, in a fixed form.
 */
import Graph from 'graphology';
import louvain from 'graphology-communities-louvain';

export interface MemberNode {
  id: string;
  name: string;
  type: string;
  importance: number;
}

export interface Link {
  source: string;
  target: string;
}

export interface DetectedCommunity {
  /** Members, most important first (ties by id). */
  members: MemberNode[];
  /** Member counts by node type, most frequent first. */
  types: { type: string; count: number }[];
  name: string;
  summary: string;
}

export interface Detection {
  communities: DetectedCommunity[];
  modularity: number;
}

/** mulberry32: a small deterministic generator, so a pass over the same graph is repeatable. */
function seeded(seed: number): () => number {
  let state = seed >>> 0;
  return () => {
    state = (state + 0x6d2b79f5) >>> 0;
    let t = state;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

const byImportance = (a: MemberNode, b: MemberNode) => b.importance - a.importance || (a.id < b.id ? -1 : 1);

/** The extract: "12 members: 9 person, 3 organization. Most important: Ada Lovelace, …". */
export function extractSummary(members: readonly MemberNode[], types: readonly { type: string; count: number }[]) {
  const mix = types.map((t) => `${t.count} ${t.type}`).join(', ');
  const top = members
    .slice(0, 5)
    .map((m) => m.name)
    .join(', ');
  return `${members.length} members: ${mix}. Most important: ${top}.`;
}

export function detectCommunities(
  nodes: readonly MemberNode[],
  links: readonly Link[],
  options: { minSize: number; seed?: number },
): Detection {
  const graph = new Graph({ type: 'undirected', multi: false, allowSelfLoops: false });
  for (const node of nodes) graph.addNode(node.id);
  for (const link of links) {
    if (link.source === link.target || !graph.hasNode(link.source) || !graph.hasNode(link.target)) continue;
    // Parallel edges (both directions, several types) add up to one heavier edge.
    graph.updateEdge(link.source, link.target, (attributes) => ({ weight: (attributes.weight ?? 0) + 1 }));
  }
  if (graph.size === 0) return { communities: [], modularity: 0 };
  const detailed = louvain.detailed(graph, { getEdgeWeight: 'weight', rng: seeded(options.seed ?? 42) });
  const groups = new Map<number, MemberNode[]>();
  for (const node of nodes) {
    const community = detailed.communities[node.id];
    if (community === undefined) continue;
    const group = groups.get(community) ?? [];
    group.push(node);
    groups.set(community, group);
  }
  const communities = [...groups.values()]
    .filter((members) => members.length >= options.minSize)
    .map((members) => {
      members.sort(byImportance);
      const counts = new Map<string, number>();
      for (const m of members) counts.set(m.type, (counts.get(m.type) ?? 0) + 1);
      const types = [...counts.entries()]
        .map(([type, count]) => ({ type, count }))
        .sort((a, b) => b.count - a.count || (a.type < b.type ? -1 : 1));
      const name = `Community: ${members
        .slice(0, 3)
        .map((m) => m.name)
        .join(', ')}`;
      return { members, types, name, summary: extractSummary(members, types) };
    })
    // Largest first; ties by the most important member's id, so the order is stable.
    .sort((a, b) => b.members.length - a.members.length || (a.members[0]!.id < b.members[0]!.id ? -1 : 1));
  return { communities, modularity: detailed.modularity };
}

/**
 * Which stored community each new one continues: the stored one sharing the most members, when
 * they share at least half of their union (Jaccard ≥ 0.5), each stored one used once. Keeping the
 * node keeps its id, so citations and links to a community survive a recompute that barely moved it.
 */
export function matchPrevious(
  detected: readonly DetectedCommunity[],
  previous: readonly { id: string; memberIds: readonly string[] }[],
): (string | null)[] {
  const owner = new Map<string, number>();
  previous.forEach((p, index) => {
    for (const id of p.memberIds) owner.set(id, index);
  });
  const taken = new Set<number>();
  return detected.map((community) => {
    const overlap = new Map<number, number>();
    for (const m of community.members) {
      const index = owner.get(m.id);
      if (index !== undefined) overlap.set(index, (overlap.get(index) ?? 0) + 1);
    }
    let best: { index: number; jaccard: number } | null = null;
    for (const [index, shared] of overlap) {
      if (taken.has(index)) continue;
      const union = community.members.length + previous[index]!.memberIds.length - shared;
      const jaccard = shared / union;
      if (jaccard >= 0.5 && (!best || jaccard > best.jaccard)) best = { index, jaccard };
    }
    if (!best) return null;
    taken.add(best.index);
    return previous[best.index]!.id;
  });
}
