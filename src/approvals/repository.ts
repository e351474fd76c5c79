import type { EntityManager } from 'typeorm';
import { affectedRows, queryFirst, queryRows } from '../platform/db/query';
import type { ApprovalStatus, ApprovalSubjectKind, ApprovalVote, CredentialKind } from './entities';
import { RunApproval } from './entities';
import type { Approvers, PolicyDecision } from './rules';

const approvals = (m: EntityManager) => m.getRepository(RunApproval);

/**
 * An approval of a run's step is decided (by a person or its deadline) only while its run is
 * unfinished; the runs' own transitions guard on the same condition (src/runs), which sits above.
 */
export const RUN_UNFINISHED = `status NOT IN ('SUCCEEDED', 'FAILED', 'CANCELLED')`;

/** Stores what an approval decides on, so a resolve finds its subject by it (never by a miss). */
export const recordApprovalSubject = (
  m: EntityManager,
  approval: { approvalId: string; workspaceId: string; subject: ApprovalSubjectKind },
) =>
  affectedRows(
    m,
    `INSERT INTO approval_subjects (approval_id, workspace_id, subject) VALUES ($1, $2, $3)
     ON CONFLICT (approval_id) DO NOTHING`,
    [approval.approvalId, approval.workspaceId, approval.subject],
  );

/** The subject an approval of the transaction's workspace decides on; undefined when there is no such approval. */
export const subjectOf = async (m: EntityManager, approvalId: string): Promise<ApprovalSubjectKind | undefined> =>
  (
    await queryFirst<{ subject: ApprovalSubjectKind }>(
      m,
      `SELECT subject FROM approval_subjects WHERE approval_id = $1`,
      [approvalId],
    )
  )?.subject;

/** The step to approve, as a run's step reads when it asks. */
export interface StepAsked {
  workspaceId: string;
  executionId: string;
  stepNo: number;
  tool: string;
  input: Record<string, unknown>;
  policyDecision: PolicyDecision | null;
}

/**
 * The step's approval row, created PENDING on first request (the retried activity finds it), with its
 * subject stored; `created` when this call created it.
 */
export async function requestApproval(
  m: EntityManager,
  step: StepAsked,
): Promise<{ approval: RunApproval; created: boolean }> {
  // Raw SQL for ON CONFLICT DO NOTHING: a retried activity must not fail on the unique step. The rule
  // that asked for it (issue 32) gives its approvers and deadline, counted from now on the database's clock.
  const decision = step.policyDecision;
  const created = await affectedRows(
    m,
    `WITH asked AS (
       INSERT INTO run_approvals
         (workspace_id, execution_id, step_no, tool, input, policy_decision, approvers, deadline, expires_at)
       VALUES ($1, $2, $3, $4, $5, $6, $7, $8,
         clock_timestamp() + make_interval(secs => ($8::jsonb->>'after_seconds')::float8))
       ON CONFLICT (execution_id, step_no) DO NOTHING
       RETURNING id, workspace_id
     )
     INSERT INTO approval_subjects (approval_id, workspace_id, subject) SELECT id, workspace_id, 'run_step' FROM asked`,
    [
      step.workspaceId,
      step.executionId,
      step.stepNo,
      step.tool,
      JSON.stringify(step.input),
      decision ? JSON.stringify(decision) : null,
      decision?.approvers ? JSON.stringify(decision.approvers) : null,
      decision?.deadline ? JSON.stringify(decision.deadline) : null,
    ],
  );
  const approval = await approvals(m).findOneByOrFail({ executionId: step.executionId, stepNo: step.stepNo });
  return { approval, created: created > 0 };
}

export const approvalsOf = (m: EntityManager, executionId: string) =>
  approvals(m).find({ where: { executionId }, order: { stepNo: 'ASC' } });

export const approvalsByIds = (m: EntityManager, ids: string[]) =>
  ids.length === 0 ? Promise.resolve([]) : approvals(m).find({ where: ids.map((id) => ({ id })) });

/** A cancelled run's pending approvals are cancelled with it (its cancel holds the run's lock). */
export const cancelPendingApprovals = (m: EntityManager, executionId: string) =>
  approvals(m).update({ executionId, status: 'pending' }, { status: 'cancelled', resolvedAt: new Date() });

export const findApproval = (m: EntityManager, executionId: string, stepNo: number) =>
  approvals(m).findOneBy({ executionId, stepNo });

export const findApprovalById = (m: EntityManager, id: string) => approvals(m).findOneBy({ id });

export const listApprovals = (m: EntityManager, query: { status?: ApprovalStatus; limit: number }) =>
  approvals(m).find({
    where: query.status ? { status: query.status } : {},
    order: { requestedAt: 'DESC', id: 'DESC' },
    take: query.limit,
  });

/**
 * PENDING → APPROVED/REJECTED exactly once, and only while the run is unfinished: raw SQL for the
 * conditional update joined to the run. Concurrent resolves queue on the row lock; the losers find
 * it no longer pending. Null when nothing changed.
 */
export const resolveApproval = (
  m: EntityManager,
  input: {
    approvalId: string;
    status: Extract<ApprovalStatus, 'approved' | 'rejected' | 'responded'>;
    userId: string;
    credential: { kind: CredentialKind; id?: string };
    notes: string | null;
    editedInput?: Record<string, unknown> | null;
    response?: string | null;
  },
) =>
  queryFirst<{ execution_id: string }>(
    m,
    `UPDATE run_approvals a SET status = $2, resolved_by = $3, notes = $4, resolved_at = now(),
       resolved_by_credential_kind = $5, resolved_by_credential_id = $6, edited_input = $7, response = $8
     FROM run_executions e
     WHERE a.id = $1 AND a.status = 'pending' AND e.id = a.execution_id AND e.${RUN_UNFINISHED}
       AND (a.expires_at IS NULL OR a.expires_at > clock_timestamp())
     RETURNING a.execution_id`,
    [
      input.approvalId,
      input.status,
      input.userId,
      input.notes,
      input.credential.kind,
      input.credential.id ?? null,
      input.editedInput ? JSON.stringify(input.editedInput) : null,
      input.response ?? null,
    ],
  );

/**
 * The approval, locked (the caller holds the run's lock, taken first as every writer of the run does),
 * and whether its deadline has passed on the database's clock.
 */
export async function lockApproval(m: EntityManager, approvalId: string) {
  const row = await queryFirst<{ due: boolean }>(
    m,
    `SELECT expires_at IS NOT NULL AND expires_at <= clock_timestamp() AS due FROM run_approvals
     WHERE id = $1 FOR UPDATE`,
    [approvalId],
  );
  if (!row) return null;
  return { approval: (await findApprovalById(m, approvalId))!, due: row.due };
}

/** A person's vote (issue 32 part 4); null when they voted on it already (the unique person and approval). */
export const insertVote = (
  m: EntityManager,
  vote: Pick<ApprovalVote, 'approval_id' | 'execution_id' | 'user_id' | 'decision' | 'notes'> & {
    workspaceId: string;
    credential: { kind: CredentialKind; id?: string };
  },
) =>
  queryFirst<ApprovalVote>(
    m,
    `INSERT INTO run_approval_votes
       (workspace_id, approval_id, execution_id, user_id, decision, credential_kind, credential_id, notes)
     VALUES ($1, $2, $3, $4, $5, $6, $7, $8) ON CONFLICT (approval_id, user_id) DO NOTHING
     RETURNING *`,
    [
      vote.workspaceId,
      vote.approval_id,
      vote.execution_id,
      vote.user_id,
      vote.decision,
      vote.credential.kind,
      vote.credential.id ?? null,
      vote.notes,
    ],
  );

/** The votes on these approvals, oldest first. */
export const votesOf = (m: EntityManager, approvalIds: string[]) =>
  approvalIds.length === 0
    ? Promise.resolve([])
    : queryRows<ApprovalVote>(
        m,
        `SELECT * FROM run_approval_votes WHERE approval_id = ANY($1::uuid[]) ORDER BY created_at, id`,
        [approvalIds],
      );

export const votesByIds = (m: EntityManager, ids: string[]) =>
  ids.length === 0
    ? Promise.resolve([])
    : queryRows<ApprovalVote>(m, `SELECT * FROM run_approval_votes WHERE id = ANY($1::uuid[])`, [ids]);

/**
 * A deadline's outcome (issue 32 part 3), exactly once: only a pending approval past its deadline on
 * the database's clock, of an unfinished run, moves; a person's resolve (guarded by the same clock)
 * and this update cannot both win. `escalate`: the next approvers and a new deadline, still pending.
 */
export const expireApproval = (
  m: EntityManager,
  approvalId: string,
  outcome: { status: 'approved' | 'rejected' } | { escalateTo: Approvers; afterSeconds: number },
) =>
  queryFirst<{ execution_id: string }>(
    m,
    'status' in outcome
      ? `UPDATE run_approvals a SET status = $2, expired = true, resolved_at = now()
         FROM run_executions e
         WHERE a.id = $1 AND a.status = 'pending' AND a.expires_at <= clock_timestamp()
           AND e.id = a.execution_id AND e.${RUN_UNFINISHED}
         RETURNING a.execution_id`
      : `UPDATE run_approvals a SET approvers = $2, escalations = a.escalations + 1,
           expires_at = clock_timestamp() + make_interval(secs => $3::float8)
         FROM run_executions e
         WHERE a.id = $1 AND a.status = 'pending' AND a.expires_at <= clock_timestamp()
           AND e.id = a.execution_id AND e.${RUN_UNFINISHED}
         RETURNING a.execution_id`,
    'status' in outcome
      ? [approvalId, outcome.status]
      : [approvalId, JSON.stringify(outcome.escalateTo), outcome.afterSeconds],
  );

/** Which of these user ids are members of the transaction's workspace. */
export const membersAmong = async (m: EntityManager, userIds: string[]): Promise<string[]> =>
  userIds.length === 0
    ? []
    : (
        await queryRows<{ user_id: string }>(
          m,
          `SELECT user_id FROM memberships WHERE workspace_id = weft_current_workspace() AND user_id = ANY($1::uuid[])`,
          [userIds],
        )
      ).map((row) => row.user_id);
