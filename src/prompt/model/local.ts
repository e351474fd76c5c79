import { InternalError } from '../../platform/errors';
import type { ContextEdge, ContextNode, GroundedAnswer, Intent, PromptModel } from './contract';
import { REFINED_GRAPH_LIMITS, RefinedGraph } from './contract';
import { statedFacts } from './facts';

const QUESTION_WORDS =
  'who|whom|whose|what|which|when|where|why|how|is|are|was|were|do|does|did|can|could|should|would|will|' +
  'list|show|tell|find|explain|describe|summari[sz]e';
const QUESTION_START = new RegExp(`^(${QUESTION_WORDS})\\b`, 'i');

/** Sentences, keeping their end punctuation; markdown list markers and headings become sentences too. */
export function sentences(text: string): string[] {
  return (
    text
      .split(/\n+/)
      .map((line) => line.replace(/^\s*(?:[-*+]|\d+[.)]|#{1,6})\s+/, '').trim())
      // A stop ends a sentence only before whitespace: "grace@navy.example" and "3.5" stay whole.
      .flatMap((line) => line.split(/(?<=[.!?])\s+/))
      .map((sentence) => sentence.trim())
      .filter(Boolean)
  );
}

const isQuestion = (sentence: string) => sentence.endsWith('?') || QUESTION_START.test(sentence);

/** Rule-based intent: questions only → query, statements only → update, a mix → both. */
export function classifyIntent(prompt: string): Intent {
  const all = sentences(prompt);
  const questions = all.filter(isQuestion).length;
  if (questions === 0) return 'update';
  return questions === all.length ? 'query' : 'both';
}

const ORGANIZATION_SUFFIX =
  /\b(Inc|Corp|Corporation|Ltd|LLC|GmbH|AG|SA|Labs|University|Institute|Foundation|Company|Group)\.?$/;
const ORGANIZATION_CUE = /\b(at|for|joined|acquired|founded|leads?|owns?)\s*$/i;
const PLACE_CUE = /\b(in|from|near|to)\s*$/i;
const STOP_CAPITALS = new Set([
  'The',
  'A',
  'An',
  'This',
  'That',
  'These',
  'Those',
  'It',
  'He',
  'She',
  'They',
  'We',
  'I',
  'And',
  'But',
  'Or',
  'Also',
  'Then',
  'Yesterday',
  'Today',
  'Tomorrow',
]);
/** A run of more capitalised words than this is a heading or shouting, not a name. */
const MAX_NAME_WORDS = 8;
/** Names are short: a longer capitalised run is not one. */
const MAX_NAME_CHARS = 120;
/** How many properties one node collects from `key: value` lines. */
const MAX_PROPERTIES = 64;
/** How far before a mention its type cues ("works at", "in") are looked for. */
const CUE_WINDOW = 40;

// The lookbehind lets a match start only where a run of address characters starts, so a long run
// without an '@' is scanned once instead of once per position (the old pattern was quadratic).
const EMAIL = /(?<![A-Za-z0-9._%+-])[A-Za-z0-9._%+-]+@[A-Za-z0-9.-]+\.[A-Za-z]{2,}/;

/** The first e-mail address in `text`, in time linear in its length. */
export const findEmail = (text: string): string | undefined => EMAIL.exec(text)?.[0];

const PROPERTY_LINE = /^\s*(?:[-*+]\s+)?([a-z][a-z0-9_ ]{0,40}):\s+(.+)$/i;

interface Mention {
  name: string;
  start: number;
  end: number;
}

/**
 * Runs of capitalised words ("Ada Lovelace", "Analytical Engine Inc"), skipping sentence-initial
 * function words; a run too long to be a name is not one.
 */
function mentions(sentence: string): Mention[] {
  const found: Mention[] = [];
  const pattern = /\b[A-Z][\p{L}\p{N}&'-]*(?:\s+(?:of\s+|de\s+|van\s+|von\s+)?[A-Z][\p{L}\p{N}&'-]*)*\.?/gu;
  for (const match of sentence.matchAll(pattern)) {
    const text = match[0].replace(/\.$/, '');
    const words = text.split(/\s+/);
    let skipped = 0;
    while (skipped < words.length && STOP_CAPITALS.has(words[skipped] ?? '')) skipped += 1;
    const kept = words.slice(skipped);
    const name = kept.join(' ');
    if (!name || kept.length > MAX_NAME_WORDS || name.length > MAX_NAME_CHARS) continue;
    let offset = 0;
    for (const word of words.slice(0, skipped)) offset = text.indexOf(word, offset) + word.length;
    offset = text.indexOf(kept[0] ?? '', offset);
    found.push({ name, start: match.index + offset, end: match.index + text.length });
  }
  return found;
}

function typeOf(mention: Mention, sentence: string): string {
  // Only the words just before the mention are cues; reading the whole prefix made long sentences
  // quadratic. A word cut by the window is not a cue.
  const from = Math.max(0, mention.start - CUE_WINDOW);
  let before = sentence.slice(from, mention.start);
  if (from > 0) before = before.replace(/^\S*/, '');
  if (ORGANIZATION_SUFFIX.test(mention.name) || ORGANIZATION_CUE.test(before)) return 'organization';
  if (PLACE_CUE.test(before)) return 'place';
  if (/^\p{Lu}\p{Ll}+(?:\s+\p{Lu}[\p{Ll}'-]+){1,2}$/u.test(mention.name)) return 'person';
  return 'concept';
}

/** "works at" → WORKS_AT; nothing useful → RELATED_TO. */
function relationOf(between: string): string {
  const words = between
    .toLowerCase()
    .replace(/[^a-z\s]/g, ' ')
    .split(/\s+/)
    .filter((word) => word && !['the', 'a', 'an', 'and', 'also', 'who', 'which', 'that'].includes(word));
  const relation = words.join('_').toUpperCase();
  return words.length === 0 || words.length > 4 || relation.length > REFINED_GRAPH_LIMITS.typeChars
    ? 'RELATED_TO'
    : relation;
}

const keyOf = (type: string, name: string) => `${type}\u0000${name.toLowerCase()}`;

type RefinedNode = RefinedGraph['nodes'][number];

function setProperty(node: RefinedNode, key: string, value: string): void {
  if (!(key in node.properties) && Object.keys(node.properties).length >= MAX_PROPERTIES) return;
  node.properties[key] = value.slice(0, REFINED_GRAPH_LIMITS.textChars);
}

/**
 * The local refiner: capitalised mentions become nodes (typed by simple cues), the words between
 * two mentions of a sentence become the edge type, and "key: value" lines and e-mail addresses
 * become properties of the sentence's first mention. Deterministic, so tests can rely on it.
 *
 * Its output is held to the same `RefinedGraph` schema as a remote model's. A long prompt gives a
 * bounded graph rather than a failure: mentions too long to be names are skipped, and once the
 * schema's node or edge bound is reached the rest of the prompt adds nothing new.
 */
export function refineLocally(prompt: string): RefinedGraph {
  const nodes: RefinedNode[] = [];
  const edges: RefinedGraph['edges'] = [];
  const byKey = new Map<string, RefinedNode>();
  const nodeFor = (type: string, name: string): RefinedNode | undefined => {
    const key = keyOf(type, name);
    const known = byKey.get(key);
    if (known || nodes.length >= REFINED_GRAPH_LIMITS.nodes) return known;
    const node: RefinedNode = { ref: `n${nodes.length + 1}`, type, name, properties: {} };
    byKey.set(key, node);
    nodes.push(node);
    return node;
  };

  let subject: RefinedNode | undefined;
  for (const line of prompt.split(/\n+/)) {
    const [, key, value] = PROPERTY_LINE.exec(line) ?? [];
    if (subject && key && value && !/^https?$/i.test(key)) {
      setProperty(subject, key.trim().toLowerCase().replace(/\s+/g, '_'), value.trim());
      continue;
    }
    for (const sentence of sentences(line)) {
      if (isQuestion(sentence)) continue;
      const found = mentions(sentence).flatMap((mention) => {
        const node = nodeFor(typeOf(mention, sentence), mention.name);
        return node ? [{ ...mention, node }] : [];
      });
      const [first] = found;
      if (!first) continue;
      subject = first.node;
      const email = findEmail(sentence);
      if (email) setProperty(subject, 'email', email);
      for (const [i, from] of found.entries()) {
        const to = found[i + 1];
        if (!to || from.node === to.node) continue;
        if (edges.length >= REFINED_GRAPH_LIMITS.edges) break;
        edges.push({
          type: relationOf(sentence.slice(from.end, to.start)),
          source_ref: from.node.ref,
          target_ref: to.node.ref,
          reasoning: 'Both are named in one statement of the prompt, joined by these words.',
          evidence: sentence.slice(0, REFINED_GRAPH_LIMITS.textChars),
        });
      }
    }
  }
  const graph = RefinedGraph.safeParse({ nodes, edges });
  // The rules above keep within the schema; should one slip, the prompt fails (and is refunded)
  // rather than writing an unbounded graph.
  if (!graph.success) throw new InternalError('The local refiner produced a graph outside its schema');
  return graph.data;
}

const words = (text: string) => new Set(text.toLowerCase().match(/[\p{L}\p{N}]+/gu) ?? []);

/**
 * The local answerer is extractive: it names the retrieved nodes that share words with the question
 * (or the best-ranked ones when none do), then states what the graph holds about them (their
 * edges to the other nodes of the context, neighbours included, and their salient properties) in
 * plain sentences, citing exactly the nodes it names. Deterministic, like the refiner.
 */
export function answerLocally(
  question: string,
  context: { nodes: ContextNode[]; edges: ContextEdge[] },
): GroundedAnswer {
  if (context.nodes.length === 0) return { answer: 'The graph holds nothing about this yet.', citations: [] };
  if (context.nodes.every((node) => node.type === 'community')) return answerFromCommunities(context.nodes);
  const asked = words(question);
  const retrieved = context.nodes.filter((node) => !node.neighbour);
  const matching = context.nodes.filter((node) => [...words(node.name)].some((word) => asked.has(word)));
  const cited = (matching.length > 0 ? matching : retrieved.length > 0 ? retrieved : context.nodes).slice(0, 5);
  const { sentences: facts, named } = statedFacts(cited, context);
  const described = cited.map((node) => `${node.name} (${node.type})`).join(', ');
  const answer = [`From the graph: ${described}.`, ...facts].join(' ');
  return { answer, citations: named };
}

/** A global question's answer: each community's summary, most important first, citing the community nodes. */
function answerFromCommunities(communities: readonly ContextNode[]): GroundedAnswer {
  const cited = communities.slice(0, 5);
  const lines = cited.map((node, index) => {
    const summary = typeof node.properties.summary === 'string' ? ` ${node.properties.summary}` : '';
    return `${index + 1}. ${node.name}:${summary}`;
  });
  const answer = [`The main groups in the graph (${communities.length} communities):`, ...lines].join(' ');
  return { answer, citations: cited.map((node) => node.id) };
}

export function createLocalPromptModel(): PromptModel {
  return {
    name: 'local',
    classify: async (prompt) => classifyIntent(prompt),
    refine: async (prompt) => refineLocally(prompt),
    answer: async (question, context) => answerLocally(question, context),
  };
}
