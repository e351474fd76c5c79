import { Column, CreateDateColumn, Entity, PrimaryGeneratedColumn } from 'typeorm';
import type { MatchReason } from './person-rules';

export type CandidateStatus = 'pending' | 'applied' | 'rejected' | 'superseded';

/** A proposed merge of two person nodes: the older one survives (migrations/1763780006000-merges.ts). */
@Entity('merge_candidates')
export class MergeCandidate {
  @PrimaryGeneratedColumn('uuid') id!: string;
  @Column({ type: 'uuid', name: 'workspace_id' }) workspaceId!: string;
  @Column({ type: 'uuid', name: 'survivor_node_id' }) survivorNodeId!: string;
  @Column({ type: 'uuid', name: 'duplicate_node_id' }) duplicateNodeId!: string;
  @Column({ type: 'text' }) status!: CandidateStatus;
  @Column({ type: 'text', array: true, name: 'match_reasons' }) matchReasons!: MatchReason[];
  // numeric(3, 2) arrives as a string from pg.
  @Column({
    type: 'numeric',
    precision: 3,
    scale: 2,
    name: 'confidence_score',
    transformer: { to: (v: number) => v, from: (v: string) => Number(v) },
  })
  confidenceScore!: number;
  @CreateDateColumn({ type: 'timestamptz', name: 'created_at' }) createdAt!: Date;
  @Column({ type: 'timestamptz', name: 'updated_at' }) updatedAt!: Date;
  @Column({ type: 'timestamptz', name: 'resolved_at', nullable: true }) resolvedAt!: Date | null;
}

/** What a merge did, kept with its action for the audit trail. */
export interface MergeActionDetails {
  edges_repointed?: number;
  edges_removed?: number;
  superseded_candidate_ids?: string[];
}

/** The one decision taken on a candidate (merged or rejected), by a reviewer or the system (null). */
@Entity('merge_actions')
export class MergeAction {
  @PrimaryGeneratedColumn('uuid') id!: string;
  @Column({ type: 'uuid', name: 'workspace_id' }) workspaceId!: string;
  @Column({ type: 'uuid', name: 'candidate_id' }) candidateId!: string;
  @Column({ type: 'text' }) action!: 'merged' | 'rejected';
  @Column({ type: 'uuid', name: 'survivor_node_id' }) survivorNodeId!: string;
  @Column({ type: 'uuid', name: 'duplicate_node_id' }) duplicateNodeId!: string;
  @Column({ type: 'uuid', name: 'performed_by', nullable: true }) performedBy!: string | null;
  @Column({ type: 'text', nullable: true }) notes!: string | null;
  @Column({ type: 'jsonb' }) details!: MergeActionDetails;
  @CreateDateColumn({ type: 'timestamptz', name: 'created_at' }) createdAt!: Date;
}
