import { Column, Entity, PrimaryGeneratedColumn } from 'typeorm';
import type { CredentialRef } from '../platform/auth/principal';
import type { Approvers, Deadline, PolicyDecision } from './rules';

export const APPROVAL_STATUSES = ['pending', 'approved', 'rejected', 'cancelled', 'responded'] as const;
export type ApprovalStatus = (typeof APPROVAL_STATUSES)[number];

/**
 * What an approval decides on, stored with its id (`approval_subjects`): a run's step (`run_step`,
 * src/runs), a staged change-set (`change_set`, src/change-sets) or a run's budget (`budget`, src/runs,
 * issue 40 item 4). Each is an `ApprovalSubject` (`subject.ts`) its feature registers; a later subject
 * joins this list.
 */
export const APPROVAL_SUBJECTS = ['run_step', 'change_set', 'budget'] as const;
export type ApprovalSubjectKind = (typeof APPROVAL_SUBJECTS)[number];

/** Whether the user who dispatched a run may resolve its approvals through another credential of theirs. */
export const DISPATCHER_MAY_APPROVE = ['when_alone', 'always', 'never'] as const;
export type DispatcherMayApprove = (typeof DISPATCHER_MAY_APPROVE)[number];

export type CredentialKind = CredentialRef['kind'];

/** A human approval a run's step waits on. */
@Entity('run_approvals')
export class RunApproval {
  @PrimaryGeneratedColumn('uuid') id!: string;
  @Column({ type: 'uuid', name: 'workspace_id' }) workspaceId!: string;
  @Column({ type: 'uuid', name: 'execution_id' }) executionId!: string;
  @Column({ type: 'integer', name: 'step_no' }) stepNo!: number;
  @Column({ type: 'text' }) tool!: string;
  @Column({ type: 'jsonb' }) input!: Record<string, unknown>;
  @Column({ type: 'text' }) status!: ApprovalStatus;
  @Column({ type: 'text', nullable: true }) notes!: string | null;
  /** The reviewer's edit of `input` the step ran with (issue 32 part 2); null when approved as asked. */
  @Column({ type: 'jsonb', name: 'edited_input', nullable: true }) editedInput!: Record<string, unknown> | null;
  /** A RESPOND's message, which the llm agent got instead of the tool's result. */
  @Column({ type: 'text', nullable: true }) response!: string | null;
  @Column({ type: 'uuid', name: 'resolved_by', nullable: true }) resolvedBy!: string | null;
  /** The kind of credential it was resolved with, and its id (a key's row, a user JWT's jti). */
  @Column({ type: 'text', name: 'resolved_by_credential_kind', nullable: true })
  resolvedByCredentialKind!: CredentialKind | null;
  @Column({ type: 'uuid', name: 'resolved_by_credential_id', nullable: true }) resolvedByCredentialId!: string | null;
  @Column({ type: 'timestamptz', name: 'requested_at' }) requestedAt!: Date;
  @Column({ type: 'timestamptz', name: 'resolved_at', nullable: true }) resolvedAt!: Date | null;
  // Issue 32 parts 3 and 4, from the rule that asked for it (null for a step's own `requires_approval`):
  /** The step's policy decision when the approval was requested. */
  @Column({ type: 'jsonb', name: 'policy_decision', nullable: true }) policyDecision!: PolicyDecision | null;
  /** Who must approve now (the escalation's approvers after one); null: anyone allowed, once. */
  @Column({ type: 'jsonb', nullable: true }) approvers!: Approvers | null;
  @Column({ type: 'jsonb', nullable: true }) deadline!: Deadline | null;
  @Column({ type: 'timestamptz', name: 'expires_at', nullable: true }) expiresAt!: Date | null;
  @Column({ type: 'integer' }) escalations!: number;
  /** The deadline decided it (`status` says how), not a person. */
  @Column({ type: 'boolean' }) expired!: boolean;
}

/** One person's vote on an approval with approvers (issue 32 part 4): `run_approval_votes`. */
export interface ApprovalVote {
  id: string;
  approval_id: string;
  execution_id: string;
  user_id: string;
  decision: 'APPROVED' | 'REJECTED' | 'RESPOND';
  credential_kind: CredentialKind;
  credential_id: string | null;
  notes: string | null;
  created_at: Date;
}
