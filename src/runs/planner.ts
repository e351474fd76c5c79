import { canonicalJson } from '../capabilities/idempotency';

/**
 * The local deterministic model of the llm agent: it plans from the goal's words, with these rules,
 * in order, and calls at most one tool before answering.
 * - "remember …" or "note …" (that …) → `ontology.remember` with the rest as the text (a write);
 * - "forget node <id>" / "forget edge <id>" → `ontology.forget` (a write);
 * - "neighbourhood of <id>" (or neighborhood, around) → `ontology.neighborhood`; "node <id>" → `ontology.get_node`;
 * - "balance" or "credits" → `billing.credits_balance`;
 * - "find …" or "search …" (for …) → `ontology.search` with the rest of the goal as the query;
 * - a question (ends with "?" or starts with who/what/when/where/why/how/which/is/are/does/do/can)
 *   → `ontology.ask` with the goal as the question;
 * - anything else → answers at once that it has no tool for the goal.
 * Once a tool has answered (or failed), the final answer reports it; a reviewer's response is the answer.
 */
export type PlannedMove =
  | { kind: 'tool'; tool: string; input: Record<string, unknown> }
  | { kind: 'final'; answer: string };

export interface PlannerHistory {
  tool: string;
  status: string;
  output: unknown;
  error: { code: string; message: string } | null;
}

const REMEMBER = /^\s*(?:please\s+)?(?:remember|note)(?:\s+that)?[\s:,]+(.+)$/is;
const UUID = '([0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12})';
const FORGET = new RegExp(`^\\s*(?:please\\s+)?forget\\s+(?:the\\s+)?(node|edge)\\s+${UUID}`, 'i');
const AROUND = new RegExp(`\\b(?:neighbou?rhood|around)\\b.*?${UUID}`, 'i');
const NODE = new RegExp(`\\bnode\\s+${UUID}`, 'i');
const QUESTION = /^(who|what|when|where|why|how|which|is|are|does|do|can)\b/i;
const SEARCH = /^\s*(?:please\s+)?(?:find|search)(?:\s+for)?\s+(.+)$/i;

export function planLocally(goal: string, history: readonly PlannerHistory[]): PlannedMove {
  const last = history.at(-1);
  if (last) {
    if (last.error?.code === 'reviewer_responded') return { kind: 'final', answer: last.error.message };
    if (last.status !== 'SUCCEEDED') return { kind: 'final', answer: `${last.tool} failed: ${last.error?.message}` };
    return { kind: 'final', answer: `${last.tool} answered: ${canonicalJson(last.output)}` };
  }
  const text = goal.trim();
  const remember = REMEMBER.exec(text);
  if (remember) return { kind: 'tool', tool: 'ontology.remember', input: { text: remember[1]!.trim() } };
  const forget = FORGET.exec(text);
  if (forget) {
    const id = forget[2]!.toLowerCase();
    return {
      kind: 'tool',
      tool: 'ontology.forget',
      input: forget[1]!.toLowerCase() === 'edge' ? { edge_id: id } : { node_id: id },
    };
  }
  const around = AROUND.exec(text);
  if (around) return { kind: 'tool', tool: 'ontology.neighborhood', input: { node_id: around[1]!.toLowerCase() } };
  const node = NODE.exec(text);
  if (node) return { kind: 'tool', tool: 'ontology.get_node', input: { node_id: node[1]!.toLowerCase() } };
  if (/\b(balance|credits)\b/i.test(text)) return { kind: 'tool', tool: 'billing.credits_balance', input: {} };
  const search = SEARCH.exec(text);
  if (search) return { kind: 'tool', tool: 'ontology.search', input: { query: search[1]!.trim() } };
  if (text.endsWith('?') || QUESTION.test(text))
    return { kind: 'tool', tool: 'ontology.ask', input: { question: text } };
  return { kind: 'final', answer: `No tool fits the goal: ${text}` };
}
