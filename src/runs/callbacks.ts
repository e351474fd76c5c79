import type { EntityManager } from 'typeorm';
import type { RunApproval } from '../approvals/entities';
import { notifyRunCallbacks } from '../run-callbacks/notify';
import type { RunError } from './entities';

// Issue 26 part 2: what a run tells its callbacks, from the two places its state changes in a way a
// callback reports (it finished; it waits for a person). Called in the transaction of the change.

/** The run's final row, as the finishing statement returned it. */
export interface FinishedRunRow {
  id: string;
  workspace_id: string;
  agent: string;
  status: string;
  error: RunError | null;
  output: unknown;
  credits_charged: number | string;
  finished_at: Date;
}

/** `run.finished`: once per run (the finishing statements change an unfinished run only). */
export const callbackRunFinished = (m: EntityManager, run: FinishedRunRow) =>
  notifyRunCallbacks(m, {
    workspaceId: run.workspace_id,
    executionId: run.id,
    event: 'run.finished',
    key: `run.finished:${run.id}`,
    data: {
      execution_id: run.id,
      status: run.status,
      agent: run.agent,
      output: run.output ?? null,
      error: run.error ?? null,
      credits_charged: Number(run.credits_charged),
      finished_at: new Date(run.finished_at).toISOString(),
    },
  });

/** `approval.requested`: once per approval, so a reviewer's tool is told. */
export const callbackApprovalRequested = (
  m: EntityManager,
  approval: Pick<
    RunApproval,
    'id' | 'workspaceId' | 'executionId' | 'stepNo' | 'tool' | 'requestedAt' | 'expiresAt' | 'approvers'
  >,
) =>
  notifyRunCallbacks(m, {
    workspaceId: approval.workspaceId,
    executionId: approval.executionId,
    event: 'approval.requested',
    key: `approval.requested:${approval.id}`,
    data: {
      execution_id: approval.executionId,
      status: 'AWAITING_APPROVAL',
      approval_id: approval.id,
      step_no: approval.stepNo,
      tool: approval.tool,
      requested_at: new Date(approval.requestedAt).toISOString(),
      // Issue 32, only when a rule set them: when its deadline applies, and who must approve.
      ...(approval.expiresAt ? { expires_at: new Date(approval.expiresAt).toISOString() } : {}),
      ...(approval.approvers ? { approvers: approval.approvers } : {}),
    },
  });
