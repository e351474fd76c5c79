import { defineWorkflow } from '../platform/temporal/contract';
import type { CodeIngestResponse } from './schemas';

/** The code graph's workflow contract. No I/O: the workflow bundle imports this file. */

/**
 * The workflow's input names the batch the API stored (code_index_batches), never the batch itself:
 * a workflow started on Temporal by hand cannot bring data of its own (review M-1).
 */
export interface CodeIndexInput {
  workspaceId: string;
  batchId: string;
  repo: string;
  /** For the static summary only. */
  counts: { symbols: number; edges: number; commits: number; final: boolean };
}

export type CodeBatchResult = Omit<CodeIngestResponse, 'workflow_id'>;

export const codeIndexWorkflowId = (workspaceId: string, repo: string) => `code-index-${workspaceId}-${repo}`;

/**
 * `code-index-<workspace>-<repo>`: applies one ingest batch. Each batch of an indexing pass is one
 * run under this id, so a repository's batches are applied one at a time and each shows in the
 * Temporal UI; a second batch while one is running is refused (the API answers 409, the CLI retries).
 */
export const codeIndexWorkflow = defineWorkflow<[CodeIndexInput], CodeBatchResult>({
  type: 'codeIndexWorkflow',
  id: (input) => codeIndexWorkflowId(input.workspaceId, input.repo),
  workspaceId: (input) => input.workspaceId,
  idReusePolicy: 'ALLOW_DUPLICATE',
  summary: ({ repo, counts }) =>
    `${repo}: ${counts.symbols} symbols, ${counts.edges} edges, ` +
    `${counts.commits} commits${counts.final ? ' (final)' : ''}`,
});
