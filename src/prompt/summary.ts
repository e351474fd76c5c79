import { createHash } from 'node:crypto';
import { LIMITS } from '../limits';
import type { Intent } from './model/contract';

export const sourceHash = (prompt: string) => createHash('sha256').update(prompt, 'utf8').digest('hex');

/**
 * The audit summary: counts and a fragment of the answer, never the prompt (contract 2.5),
 * at most 500 characters.
 */
export function auditSummary(input: {
  intent: Intent;
  nodesCreated: number;
  edgesCreated: number;
  answer?: string | null;
  error?: string;
}): string {
  const parts = [`${input.intent}: ${input.nodesCreated} nodes and ${input.edgesCreated} edges created`];
  if (input.error) parts.push(`failed with ${input.error}`);
  if (input.answer) parts.push(`answer: ${input.answer.replace(/\s+/g, ' ').trim()}`);
  const summary = parts.join('; ');
  return summary.length <= LIMITS.auditSummaryChars ? summary : `${summary.slice(0, LIMITS.auditSummaryChars - 1)}…`;
}
