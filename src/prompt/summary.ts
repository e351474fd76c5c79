import { createHash } from 'node:crypto';
import { LIMITS } from '../rules/limits';
import type { Intent } from './model/contract';

export const sourceHash = (prompt: string) => createHash('sha256').update(prompt, 'utf8').digest('hex');

/**
 * The audit summary: counts and a fragment of the answer, never the prompt (knowledge-graph-service-api.md §2.5),
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

/**
 * SHA-256 of a request: what is asked and every option that changes what runs, so a correlation
 * id reused for anything else is recognised. Streams and prompts never share one.
 */
export const requestHash = (
  request:
    | { endpoint: 'prompt'; prompt: string; forceIntent: Intent | null; promptKind: string; stage?: true }
    | { endpoint: 'stream'; prompt: string },
) =>
  createHash('sha256')
    .update(
      JSON.stringify(
        request.endpoint === 'prompt'
          ? [
              request.endpoint,
              request.prompt,
              request.forceIntent,
              request.promptKind,
              // A staged request is another request; unstaged ones hash as they always did.
              ...(request.stage ? ['stage'] : []),
            ]
          : [request.endpoint, request.prompt],
      ),
      'utf8',
    )
    .digest('hex');
