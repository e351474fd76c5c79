import { Column, Entity, PrimaryColumn, PrimaryGeneratedColumn } from 'typeorm';
import type { PolicyDecision } from '../approvals/rules';
import type { BudgetLimits } from '../approvals/schemas';
import type { StoredPrincipal } from '../platform/auth/stored-principal';
import type { ConcurrencyPolicy } from './control-schemas';

export const RUN_STATUSES = [
  'QUEUED',
  'RUNNING',
  'AWAITING_APPROVAL',
  'WAITING',
  'SUCCEEDED',
  'FAILED',
  'CANCELLED',
] as const;
export type RunStatus = (typeof RUN_STATUSES)[number];
export const FINISHED_STATUSES: readonly RunStatus[] = ['SUCCEEDED', 'FAILED', 'CANCELLED'];

export type StepStatus = 'PENDING' | 'RUNNING' | 'SUCCEEDED' | 'FAILED' | 'SKIPPED';

/**
 * What a run's steps act as: the dispatcher, frozen at dispatch (platform/auth/stored-principal.ts);
 * the credential's expiry is re-checked before each step.
 */
export type RunPrincipal = StoredPrincipal;

export interface RunError {
  code: string;
  message: string;
  step: number | null;
}

/** One dispatched run (an execution), and the Temporal workflow `run-<id>` that drives it. */
@Entity('run_executions')
export class RunExecution {
  @PrimaryGeneratedColumn('uuid') id!: string;
  @Column({ type: 'uuid', name: 'workspace_id' }) workspaceId!: string;
  @Column({ type: 'uuid', name: 'user_id' }) userId!: string;
  @Column({ type: 'uuid', name: 'run_id' }) runId!: string;
  @Column({ type: 'text' }) agent!: 'playbook' | 'llm';
  @Column({ type: 'text' }) status!: RunStatus;
  @Column({ type: 'jsonb' }) input!: Record<string, unknown>;
  @Column({ type: 'jsonb', nullable: true }) output!: unknown;
  @Column({ type: 'jsonb', nullable: true }) error!: RunError | null;
  @Column({ type: 'jsonb' }) principal!: RunPrincipal;
  @Column({ type: 'text', name: 'idempotency_key', nullable: true }) idempotencyKey!: string | null;
  @Column({ type: 'char', length: 64, name: 'request_hash', nullable: true }) requestHash!: string | null;
  @Column({ type: 'integer', name: 'credits_charged' }) creditsCharged!: number;
  @Column({ type: 'timestamptz', name: 'created_at' }) createdAt!: Date;
  @Column({ type: 'timestamptz', name: 'updated_at' }) updatedAt!: Date;
  @Column({ type: 'timestamptz', name: 'finished_at', nullable: true }) finishedAt!: Date | null;
  // Issue 26 parts 4 and 5 (src/runs/concurrency.ts, rerun.ts): tags, the concurrency key, the start
  // a run waiting for a slot holds back, and the run a rerun repeats.
  @Column({ type: 'text', array: true }) tags!: string[];
  @Column({ type: 'text', name: 'concurrency_key', nullable: true }) concurrencyKey!: string | null;
  @Column({ type: 'integer', name: 'concurrency_limit', nullable: true }) concurrencyLimit!: number | null;
  @Column({ type: 'text', name: 'concurrency_policy', nullable: true }) concurrencyPolicy!: ConcurrencyPolicy | null;
  @Column({ type: 'jsonb', name: 'held_start', nullable: true }) heldStart!: Record<string, unknown> | null;
  @Column({ type: 'uuid', name: 'rerun_of', nullable: true }) rerunOf!: string | null;
  @Column({ type: 'char', length: 64, name: 'rerun_of_head_hash', nullable: true }) rerunOfHeadHash!: string | null;
  @Column({ type: 'integer', name: 'rerun_from_step', nullable: true }) rerunFromStep!: number | null;
  /** Issue 43: its `flow.priority` (1 first), its order among its workspace's runs (priority-gate.ts). */
  @Column({ type: 'smallint' }) priority!: number;
  /** The run schedule that dispatched it (issue 26 part 3); null for any other dispatch. */
  @Column({ type: 'uuid', name: 'schedule_id', nullable: true }) scheduleId!: string | null;
  /** What the run may spend before a person must raise it (issue 40 item 4, `budget.ts`); null: no budget. */
  @Column({ type: 'jsonb', nullable: true }) budget!: BudgetLimits | null;
  /** Issue 40 item 2 (`children.ts`): the run whose step started it, its tree's root, and its depth below that root. */
  @Column({ type: 'uuid', name: 'parent_execution_id', nullable: true }) parentExecutionId!: string | null;
  @Column({ type: 'uuid', name: 'root_execution_id', nullable: true }) rootExecutionId!: string | null;
  @Column({ type: 'integer' }) depth!: number;
  /** Issue 43 item 2 (`flow.ts`): what holds a QUEUED run's start back (with `held_start`), and when it starts. */
  @Column({ type: 'text', name: 'throttle_key', nullable: true }) throttleKey!: string | null;
  @Column({ type: 'text', name: 'rate_limit_key', nullable: true }) rateLimitKey!: string | null;
  @Column({ type: 'text', name: 'debounce_key', nullable: true }) debounceKey!: string | null;
  @Column({ type: 'text', name: 'flow_hold', nullable: true }) flowHold!: 'throttle' | 'debounce' | 'priority' | null;
  @Column({ type: 'timestamptz', name: 'flow_start_at', nullable: true }) flowStartAt!: Date | null;
  /**
   * Issue 41 (`connector-pins.ts`): each connector's version when the run was dispatched, by connector id;
   * null for a run dispatched before runs kept them (it uses the current versions).
   */
  @Column({ type: 'jsonb', name: 'connector_versions', nullable: true }) connectorVersions!: ConnectorPinsRow | null;
}

/** `run_executions.connector_versions`: connector id → its name and version when the run started. */
export type ConnectorPinsRow = Record<string, { name: string; version: number }>;

/** One step of a run: planned at dispatch, run by the workflow's step activity. */
@Entity('run_steps')
export class RunStep {
  @PrimaryGeneratedColumn('uuid') id!: string;
  @Column({ type: 'uuid', name: 'workspace_id' }) workspaceId!: string;
  @Column({ type: 'uuid', name: 'execution_id' }) executionId!: string;
  @Column({ type: 'integer', name: 'step_no' }) stepNo!: number;
  @Column({ type: 'text' }) kind!: 'TOOL' | 'DECISION';
  @Column({ type: 'text' }) tool!: string;
  @Column({ type: 'jsonb' }) input!: Record<string, unknown>;
  @Column({ type: 'boolean', name: 'requires_approval' }) requiresApproval!: boolean;
  @Column({ type: 'text' }) status!: StepStatus;
  @Column({ type: 'jsonb', nullable: true }) output!: unknown;
  @Column({ type: 'jsonb', nullable: true }) error!: RunError | null;
  @Column({ type: 'integer', name: 'credits_charged' }) creditsCharged!: number;
  @Column({ type: 'uuid', name: 'supersedes_step_id', nullable: true }) supersedesStepId!: string | null;
  @Column({ type: 'boolean' }) superseded!: boolean;
  @Column({ type: 'uuid', name: 'reused_from_step_id', nullable: true }) reusedFromStepId!: string | null;
  /** What the approval rules decided when it was about to run (issue 32); null before, and for older rows. */
  @Column({ type: 'jsonb', name: 'policy_decision', nullable: true }) policyDecision!: PolicyDecision | null;
  @Column({ type: 'timestamptz', name: 'started_at', nullable: true }) startedAt!: Date | null;
  @Column({ type: 'timestamptz', name: 'finished_at', nullable: true }) finishedAt!: Date | null;
}

export type AuditKind = 'TOOL' | 'APPROVAL' | 'DECISION' | 'RERUN' | 'VOTE' | 'BUDGET';

/** One link of a run's hash chain; its entry is recomputed from the row `refId` names. */
@Entity('run_audit')
export class RunAuditLink {
  @PrimaryColumn({ type: 'uuid', name: 'execution_id' }) executionId!: string;
  @PrimaryColumn({ type: 'integer' }) seq!: number;
  @Column({ type: 'uuid', name: 'workspace_id' }) workspaceId!: string;
  @Column({ type: 'text' }) kind!: AuditKind;
  @Column({ type: 'uuid', name: 'ref_id' }) refId!: string;
  @Column({ type: 'char', length: 64, name: 'prev_hash' }) prevHash!: string;
  @Column({ type: 'char', length: 64 }) hash!: string;
  @Column({ type: 'timestamptz', name: 'created_at' }) createdAt!: Date;
}
