import type { EntityManager } from 'typeorm';
import type { ExpiryOutcome } from '../approvals/deadlines';
import { applyDeadline } from '../approvals/deadlines';
import type { ApprovalVote, RunApproval } from '../approvals/entities';
import * as approvals from '../approvals/repository';
import { approvalEntry, voteEntry } from './audit';
import * as auditRepo from './audit-repository';
import type { RunStep } from './entities';
import { recordRunEvent } from './event-repository';
import * as executionRepo from './execution-repository';

/**
 * A step's approval in its run's history (issue 32 parts 3 and 4), shared by the API (votes,
 * resolves, cancels) and the run workflow's activities (a deadline's outcome): each vote and each
 * decision is a link of the run's chain and an event of its stream. The approval itself is
 * src/approvals'.
 */

/**
 * The step's approval row, created PENDING on first request (the retried activity finds it), with
 * its `approval.requested` event when this call created it.
 */
export async function requestStepApproval(m: EntityManager, step: RunStep): Promise<RunApproval> {
  const { approval, created } = await approvals.requestApproval(m, step);
  if (created) {
    await recordRunEvent(m, step.executionId, {
      type: 'approval.requested',
      data: {
        approval_id: approval.id,
        step_no: approval.stepNo,
        tool: approval.tool,
        input: approval.input,
        ...(approval.approvers ? { approvers: approval.approvers } : {}),
        ...(approval.expiresAt ? { expires_at: approval.expiresAt.toISOString() } : {}),
      },
    });
  }
  return approval;
}

/** Appends a resolved (or cancelled, or expired) approval to its run's chain, as the row now reads. */
export async function auditApproval(m: EntityManager, approvalId: string): Promise<void> {
  const approval = (await approvals.findApprovalById(m, approvalId))!;
  const audit = await auditRepo.appendAudit(m, {
    workspaceId: approval.workspaceId,
    executionId: approval.executionId,
    kind: 'APPROVAL',
    refId: approval.id,
    entry: approvalEntry(approval),
  });
  await recordRunEvent(m, approval.executionId, {
    type: 'approval.resolved',
    data: {
      approval_id: approval.id,
      step_no: approval.stepNo,
      status: approval.status,
      resolved_by: approval.resolvedBy,
      notes: approval.notes,
      ...(approval.expired ? { expired: true } : {}),
    },
    audit,
  });
}

/** A vote's VOTE link and `approval.voted` event. */
export async function auditVote(m: EntityManager, approval: RunApproval, vote: ApprovalVote): Promise<void> {
  const audit = await auditRepo.appendAudit(m, {
    workspaceId: approval.workspaceId,
    executionId: approval.executionId,
    kind: 'VOTE',
    refId: vote.id,
    entry: voteEntry(vote),
  });
  await recordRunEvent(m, approval.executionId, {
    type: 'approval.voted',
    data: { approval_id: approval.id, step_no: approval.stepNo, user_id: vote.user_id, decision: vote.decision },
    audit,
  });
}

/**
 * The deadline of a step's approval once due (`applyDeadline`), under the run's lock then the
 * approval's, as a resolve takes them; an escalation is an `approval.escalated` event, an expiry a
 * resolved approval in the chain.
 */
export async function expireStepApproval(
  m: EntityManager,
  executionId: string,
  stepNo: number,
): Promise<ExpiryOutcome> {
  await executionRepo.lockExecution(m, executionId);
  const found = await approvals.findApproval(m, executionId, stepNo);
  if (!found) return 'settled';
  const { outcome, escalated } = await applyDeadline(m, found.id);
  if (escalated) {
    await recordRunEvent(m, executionId, {
      type: 'approval.escalated',
      data: {
        approval_id: escalated.id,
        step_no: escalated.stepNo,
        escalations: escalated.escalations,
        approvers: escalated.approvers,
        expires_at: escalated.expiresAt?.toISOString() ?? null,
      },
    });
  }
  if (outcome === 'approved' || outcome === 'rejected') await auditApproval(m, found.id);
  return outcome;
}
