import type { EntityManager } from 'typeorm';
import type { RunApproval } from '../approvals/entities';
import * as approvals from '../approvals/repository';
import type { UnitOfWork } from '../platform/db/unit-of-work';
import { expireStepApproval, requestStepApproval } from './approval-audit';
import { callbackApprovalRequested } from './callbacks';
import type { RunStatus } from './entities';
import { FINISHED_STATUSES } from './entities';
import * as executionRepo from './execution-repository';
import * as stepRepo from './step-repository';

const isFinished = (status: RunStatus) => FINISHED_STATUSES.includes(status);

export interface ApprovalState {
  run: RunStatus;
  approval: RunApproval['status'];
  /** The approval row's id, for the run's WeftWaitingFor; absent when there is none (and in older histories). */
  approvalId?: string;
  /**
   * Issue 32 part 3, only for a pending approval with a deadline: when it expires (ISO, the database's
   * clock), which the workflow's timer waits for; the row keeps it, so it survives continue-as-new.
   */
  expiresAt?: string;
  /** The deadline decided the approval (it was `rejected` or `approved` by no person). */
  expired?: boolean;
}

/** The fields of an approval's state beyond its status: its deadline while pending, or that it expired. */
const deadlineOf = (approval: RunApproval | null | undefined): Pick<ApprovalState, 'expiresAt' | 'expired'> => {
  if (!approval) return {};
  if (approval.status === 'pending' && approval.expiresAt) return { expiresAt: approval.expiresAt.toISOString() };
  return approval.expired ? { expired: true } : {};
};

/** The run's and the step's approval status as the workflow's wait reads them. */
async function readApprovalState(m: EntityManager, executionId: string, stepNo: number): Promise<ApprovalState> {
  const run = await executionRepo.mustFindExecution(m, executionId);
  const approval = await approvals.findApproval(m, executionId, stepNo);
  return {
    run: run.status,
    approval: approval?.status ?? 'pending',
    approvalId: approval?.id,
    ...deadlineOf(approval),
  };
}

/**
 * The run workflow's approval wait, its activities' half (issue 12, 32 part 3): a step's approval
 * requested once, its state re-read after a signal or the re-check timer, its deadline applied once
 * due, and the run resumed after it. `afterCommit` is a unit of work whose outbox events (the
 * `approval.requested` callbacks) leave right after it commits.
 */
export function createStepApprovals(deps: {
  uow: UnitOfWork;
  afterCommit: <T>(workspaceId: string, work: (m: EntityManager) => Promise<T>) => Promise<T>;
}) {
  const { uow, afterCommit } = deps;
  return {
    /** Creates the step's approval (PENDING) once and moves the run to AWAITING_APPROVAL. */
    async requestApproval(workspaceId: string, executionId: string, stepNo: number): Promise<ApprovalState> {
      return afterCommit(workspaceId, async (m) => {
        const run = await executionRepo.mustFindExecution(m, executionId);
        if (isFinished(run.status)) return { run: run.status, approval: 'cancelled' };
        const step = await stepRepo.findStep(m, executionId, stepNo);
        const approval = await requestStepApproval(m, step!);
        if (approval.status === 'pending') {
          await executionRepo.setStatus(m, executionId, 'AWAITING_APPROVAL');
          await callbackApprovalRequested(m, approval);
        }
        const now = (await executionRepo.mustFindExecution(m, executionId)).status;
        return { run: now, approval: approval.status, approvalId: approval.id, ...deadlineOf(approval) };
      });
    },

    /**
     * The deadline's outcome when it has passed (issue 32 part 3; `approvals/deadlines.ts`), then the
     * state as `approvalState` answers it: a deadline not yet due on the database's clock changes nothing.
     */
    async expireApproval(workspaceId: string, executionId: string, stepNo: number): Promise<ApprovalState> {
      return afterCommit(workspaceId, async (m) => {
        await expireStepApproval(m, executionId, stepNo);
        return readApprovalState(m, executionId, stepNo);
      });
    },

    /** The run's and the approval's status, re-read after a signal or the re-check timer. */
    async approvalState(workspaceId: string, executionId: string, stepNo: number): Promise<ApprovalState> {
      return uow({ workspaceId }, (m) => readApprovalState(m, executionId, stepNo));
    },

    /**
     * AWAITING_APPROVAL → RUNNING after an approval; false when the run finished meanwhile. A run
     * already RUNNING (this activity retried, or a resumed execution passing an approved step) is true.
     */
    resume: (workspaceId: string, executionId: string): Promise<boolean> =>
      uow({ workspaceId }, (m) => executionRepo.resumeExecution(m, executionId)),
  };
}
