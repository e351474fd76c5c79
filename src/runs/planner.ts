import { canonicalJson } from '../capabilities/idempotency';

/**
 * The local deterministic model of the llm agent: it plans from the goal's words, with these rules,
 * in order, and calls at most one tool before answering.
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
  if (/\b(balance|credits)\b/i.test(text)) return { kind: 'tool', tool: 'billing.credits_balance', input: {} };
  const search = SEARCH.exec(text);
  if (search) return { kind: 'tool', tool: 'ontology.search', input: { query: search[1]!.trim() } };
  if (text.endsWith('?') || QUESTION.test(text))
    return { kind: 'tool', tool: 'ontology.ask', input: { question: text } };
  return { kind: 'final', answer: `No tool fits the goal: ${text}` };
}
