import type { ContextEdge, ContextNode, GroundedAnswer, Intent, PromptModel, RefinedGraph } from './contract';

const QUESTION_START =
  /^(who|whom|whose|what|which|when|where|why|how|is|are|was|were|do|does|did|can|could|should|would|will|list|show|tell|find|explain|describe|summari[sz]e)\b/i;

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
const EMAIL = /[A-Za-z0-9._%+-]+@[A-Za-z0-9.-]+\.[A-Za-z]{2,}/;

interface Mention {
  name: string;
  start: number;
  end: number;
}

/** Runs of capitalised words ("Ada Lovelace", "Analytical Engine Inc"), skipping sentence-initial function words. */
function mentions(sentence: string): Mention[] {
  const found: Mention[] = [];
  const pattern = /\b[A-Z][\p{L}\p{N}&'-]*(?:\s+(?:of\s+|de\s+|van\s+|von\s+)?[A-Z][\p{L}\p{N}&'-]*)*\.?/gu;
  for (const match of sentence.matchAll(pattern)) {
    const text = match[0].replace(/\.$/, '');
    const end = match.index + text.length;
    const words = text.split(/\s+/);
    let start = match.index;
    while (words.length > 0 && STOP_CAPITALS.has(words[0]!)) {
      start = sentence.indexOf(words[1] ?? '', start + words[0]!.length);
      words.shift();
    }
    const name = words.join(' ');
    if (name) found.push({ name, start, end });
  }
  return found;
}

function typeOf(mention: Mention, sentence: string): string {
  const before = sentence.slice(0, mention.start);
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
  return words.length === 0 || words.length > 4 ? 'RELATED_TO' : words.join('_').toUpperCase();
}

const keyOf = (type: string, name: string) => `${type}\u0000${name.toLowerCase()}`;

/**
 * The local refiner: capitalised mentions become nodes (typed by simple cues), the words between
 * two mentions of a sentence become the edge type, and "key: value" lines and e-mail addresses
 * become properties of the sentence's first mention. Deterministic, so tests can rely on it.
 */
export function refineLocally(prompt: string): RefinedGraph {
  const nodes: RefinedGraph['nodes'] = [];
  const edges: RefinedGraph['edges'] = [];
  const refs = new Map<string, string>();
  const nodeRef = (type: string, name: string) => {
    const key = keyOf(type, name);
    let ref = refs.get(key);
    if (!ref) {
      ref = `n${nodes.length + 1}`;
      refs.set(key, ref);
      nodes.push({ ref, type, name, properties: {} });
    }
    return ref;
  };

  let subject: string | undefined;
  for (const line of prompt.split(/\n+/)) {
    const property = /^\s*(?:[-*+]\s+)?([a-z][a-z0-9_ ]{0,40}):\s+(.+)$/i.exec(line);
    if (property && subject && !/^https?$/i.test(property[1]!)) {
      const node = nodes.find((candidate) => candidate.ref === subject)!;
      node.properties[property[1]!.trim().toLowerCase().replace(/\s+/g, '_')] = property[2]!.trim();
      continue;
    }
    for (const sentence of sentences(line)) {
      if (isQuestion(sentence)) continue;
      const found = mentions(sentence);
      if (found.length === 0) continue;
      const sentenceRefs = found.map((mention) => nodeRef(typeOf(mention, sentence), mention.name));
      subject = sentenceRefs[0];
      const email = EMAIL.exec(sentence);
      if (email) nodes.find((node) => node.ref === subject)!.properties.email = email[0];
      for (let i = 0; i + 1 < found.length; i += 1) {
        if (sentenceRefs[i] === sentenceRefs[i + 1]) continue;
        edges.push({
          type: relationOf(sentence.slice(found[i]!.end, found[i + 1]!.start)),
          source_ref: sentenceRefs[i]!,
          target_ref: sentenceRefs[i + 1]!,
          reasoning: 'Both are named in one statement of the prompt, joined by these words.',
          evidence: sentence.slice(0, 1000),
        });
      }
    }
  }
  return { nodes, edges };
}

const words = (text: string) => new Set(text.toLowerCase().match(/[\p{L}\p{N}]+/gu) ?? []);

/**
 * The local answerer is extractive: it names the context nodes that share words with the question
 * (or the best-ranked ones when none do) and the relations among them, citing exactly those nodes.
 */
export function answerLocally(
  question: string,
  context: { nodes: ContextNode[]; edges: ContextEdge[] },
): GroundedAnswer {
  if (context.nodes.length === 0) return { answer: 'The graph holds nothing about this yet.', citations: [] };
  const asked = words(question);
  const matching = context.nodes.filter((node) => [...words(node.name)].some((word) => asked.has(word)));
  const cited = (matching.length > 0 ? matching : context.nodes).slice(0, 5);
  const citedIds = new Set(cited.map((node) => node.id));
  const byId = new Map(context.nodes.map((node) => [node.id, node]));
  const facts = context.edges
    .filter((edge) => citedIds.has(edge.source_node_id) || citedIds.has(edge.target_node_id))
    .slice(0, 8)
    .map((edge) => {
      const source = byId.get(edge.source_node_id);
      const target = byId.get(edge.target_node_id);
      if (!source || !target) return undefined;
      citedIds.add(source.id).add(target.id);
      return `${source.name} ${edge.type.toLowerCase().replace(/_/g, ' ')} ${target.name}.`;
    })
    .filter((fact): fact is string => fact !== undefined);
  const described = cited.map((node) => `${node.name} (${node.type})`).join(', ');
  const answer = [`From the graph: ${described}.`, ...facts].join(' ');
  return { answer, citations: [...citedIds] };
}

export function createLocalPromptModel(): PromptModel {
  return {
    name: 'local',
    classify: async (prompt) => classifyIntent(prompt),
    refine: async (prompt) => refineLocally(prompt),
    answer: async (question, context) => answerLocally(question, context),
  };
}
