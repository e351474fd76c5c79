import type { ContextEdge, ContextNode } from './contract';

/** How many edge facts and how many properties of each node an answer states, at most. */
export const ANSWER_LIMITS = { facts: 8, propertiesPerNode: 3, propertyChars: 200 } as const;

/** A sentence ends with its stop once: "Analytical Engines Ltd." is not followed by a second one. */
const sentence = (text: string) => (/[.!?]$/.test(text) ? text : `${text}.`);

/** WORKS_AT, works_at and worksAt all read "works at". */
export const relationWords = (type: string) =>
  type
    .replace(/([a-z])([A-Z])/g, '$1 $2')
    .replace(/[_\-.:]+/g, ' ')
    .trim()
    .toLowerCase();

/** "Ada Lovelace works at Analytical Engines Ltd." */
export const edgeSentence = (source: Pick<ContextNode, 'name'>, type: string, target: Pick<ContextNode, 'name'>) =>
  sentence(`${source.name} ${relationWords(type)} ${target.name}`);

/**
 * A property worth saying in an answer: a short one-line text, a number or a yes/no, under a key
 * that is not internal (`_…`). Keys in sorted order, so the answer is deterministic.
 */
function salientProperties(properties: Record<string, unknown>): [string, string][] {
  return Object.keys(properties)
    .sort()
    .flatMap((key): [string, string][] => {
      const value = properties[key];
      if (key.startsWith('_')) return [];
      if (typeof value === 'number' || typeof value === 'boolean') return [[key, String(value)]];
      if (typeof value !== 'string') return [];
      const text = value.trim();
      if (!text || text.length > ANSWER_LIMITS.propertyChars || /\n/.test(text)) return [];
      return [[key, text]];
    })
    .slice(0, ANSWER_LIMITS.propertiesPerNode);
}

/** "Ada Lovelace's email is ada@example.org." for each salient property. */
export const propertySentences = (node: Pick<ContextNode, 'name' | 'properties'>): string[] =>
  salientProperties(node.properties).map(([key, value]) =>
    sentence(`${node.name}'s ${key.replace(/_/g, ' ')} is ${value}`),
  );

/**
 * What the graph holds about `cited`, in plain sentences: each edge touching a cited node whose
 * other end is in the context (a cited node or a neighbour), cited nodes in their order and each
 * one's edges by relation and the other end's name; then each cited node's salient properties.
 * Returns the sentences and the ids they name, which are all an answer may cite.
 */
export function statedFacts(
  cited: readonly ContextNode[],
  context: { nodes: readonly ContextNode[]; edges: readonly ContextEdge[] },
): { sentences: string[]; named: string[] } {
  const byId = new Map(context.nodes.map((node) => [node.id, node]));
  const named = new Set(cited.map((node) => node.id));
  const said = new Set<string>();
  const facts: string[] = [];
  for (const node of cited) {
    const touching = context.edges
      .filter((edge) => edge.source_node_id === node.id || edge.target_node_id === node.id)
      .flatMap((edge) => {
        const source = byId.get(edge.source_node_id);
        const target = byId.get(edge.target_node_id);
        return source && target ? [{ edge, source, target, text: edgeSentence(source, edge.type, target) }] : [];
      })
      .sort((a, b) => (a.text < b.text ? -1 : a.text > b.text ? 1 : 0));
    for (const fact of touching) {
      if (facts.length >= ANSWER_LIMITS.facts) break;
      if (said.has(fact.text)) continue;
      said.add(fact.text);
      facts.push(fact.text);
      named.add(fact.source.id).add(fact.target.id);
    }
  }
  const properties = cited.flatMap((node) => propertySentences(node));
  return { sentences: [...facts, ...properties], named: [...named] };
}
