import { proxyActivities } from '@temporalio/workflow';
import type { Activities } from '../activities';
import type { CodeBatchResult, CodeIndexInput } from '../src/code/workflow';
import { databaseActivity } from './activity-options';

const { applyCodeBatch } = proxyActivities<Activities>(databaseActivity);

/**
 * `code-index-<workspace>-<repo>`: one ingest batch, applied in one transaction by an activity
 * (idempotent: nodes are keyed, edges matched by their ends and type), so a retry after a worker
 * died redoes nothing twice.
 */
export async function codeIndexWorkflow(input: CodeIndexInput): Promise<CodeBatchResult> {
  return applyCodeBatch(input);
}
