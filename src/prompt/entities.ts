import { Column, CreateDateColumn, Entity, PrimaryColumn, PrimaryGeneratedColumn } from 'typeorm';
import type { Intent } from './model/contract';

/** `running` from the claim until the run settles; a refusal is `error` with no reservation. */
export type PromptRunStatus = 'running' | 'ok' | 'error';

/**
 * The audit row of one prompt call (knowledge-graph-service-api.md §2.5 of knowledge-graph-service-api.md), claimed
 * before anything runs and settled once. Never the raw prompt.
 */
@Entity('prompt_runs')
export class PromptRun {
  @PrimaryGeneratedColumn('uuid') id!: string;
  @Column({ type: 'uuid', name: 'workspace_id' }) workspaceId!: string;
  @Column({ type: 'uuid', name: 'correlation_id' }) correlationId!: string;
  @Column({ type: 'text', name: 'prompt_kind' }) promptKind!: string;
  @Column({ type: 'char', length: 64, name: 'source_hash' }) sourceHash!: string;
  @Column({ type: 'text' }) intent!: Intent;
  @Column({ type: 'text' }) status!: PromptRunStatus;
  @Column({ type: 'integer', name: 'node_count' }) nodeCount!: number;
  @Column({ type: 'integer', name: 'edge_count' }) edgeCount!: number;
  @Column({ type: 'integer', name: 'credits_used' }) creditsUsed!: number;
  @Column({ type: 'uuid', name: 'linked_credit_ledger_id', nullable: true }) linkedCreditLedgerId!: string | null;
  @Column({ type: 'varchar', length: 500 }) summary!: string;
  @Column({ type: 'text', name: 'error_code', nullable: true }) errorCode!: string | null;
  @Column({ type: 'integer', name: 'duration_ms' }) durationMs!: number;
  /** SHA-256 of the request (prompt and options): a correlation id names one request for good. */
  @Column({ type: 'char', length: 64, name: 'request_hash', nullable: true }) requestHash!: string | null;
  /** The grounded answer and its citations, for a replay (the summary keeps only a fragment). */
  @Column({ type: 'text', nullable: true }) answer!: string | null;
  @Column({ type: 'uuid', array: true, nullable: true }) citations!: string[] | null;
  /** The domain failure of a run that failed, for a replay; parsed on read (`StoredFailure`). */
  @Column({ type: 'jsonb', nullable: true }) failure!: unknown;
  @CreateDateColumn({ type: 'timestamptz', name: 'created_at' }) createdAt!: Date;
}

/**
 * What one prompt wrote, keyed by its correlation id: it makes the persist step exactly-once and
 * tells the compensation what to undo.
 */
@Entity('prompt_writes')
export class PromptWrite {
  @PrimaryColumn({ type: 'uuid', name: 'workspace_id' }) workspaceId!: string;
  @PrimaryColumn({ type: 'uuid', name: 'correlation_id' }) correlationId!: string;
  /** Created nodes first, then the older nodes it referenced. */
  @Column({ type: 'uuid', array: true, name: 'node_ids' }) nodeIds!: string[];
  @Column({ type: 'uuid', array: true, name: 'edge_ids' }) edgeIds!: string[];
  /** References this prompt added to nodes that existed before it: {node_id: count}. */
  @Column({ type: 'jsonb', name: 'reference_deltas' }) referenceDeltas!: Record<string, number>;
  /** Each created node's reference count as the prompt left it: more later means others referenced it. */
  @Column({ type: 'jsonb', name: 'created_references' }) createdReferences!: Record<string, number>;
  @Column({ type: 'timestamptz', name: 'undone_at', nullable: true }) undoneAt!: Date | null;
  @CreateDateColumn({ type: 'timestamptz', name: 'created_at' }) createdAt!: Date;
}
