import { Column, CreateDateColumn, Entity, PrimaryGeneratedColumn } from 'typeorm';
import type { MatchReason, PairEvidence } from './person-rules';

export type CandidateStatus = 'pending' | 'applied' | 'rejected' | 'superseded' | 'unmerged';

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
  /** What matched when the merge was undone; the resolver skips the pair while it matches the same way. */
  @Column({ type: 'jsonb', name: 'unmerged_evidence', nullable: true }) unmergedEvidence!: PairEvidence | null;
}

/** An edge as a merge found it, before it re-pointed or soft-deleted it. */
export interface RecordedEdge {
  id: string;
  type: string;
  source_node_id: string;
  target_node_id: string;
  properties: Record<string, unknown>;
  reasoning: string | null;
  evidence: string | null;
  created_at: string;
}

/**
 * Exactly what a merge changed, so that it can be undone (unmerge-apply.ts, pair-repository.ts): the transaction's
 * time to the microsecond (the duplicate's deleted_at and the removed edges' too), the survivor's
 * properties before and after, and the duplicate's edges as they were, split by what happened to them.
 */
export interface MergeUndoRecord {
  merged_at: string;
  survivor_properties_before: Record<string, unknown>;
  survivor_properties_after: Record<string, unknown>;
  /** Re-pointed to the survivor; their endpoints here are the ones before the merge. */
  repointed_edges: RecordedEdge[];
  /** Soft-deleted as duplicates of a survivor edge, or because they joined the two nodes. */
  removed_edges: RecordedEdge[];
}

/** What an unmerge did (the `unmerged` action's details). */
export interface UnmergeDetails {
  edges_restored: string[];
  edges_undeleted: string[];
  edges_not_restored: { id: string; reason: string }[];
  edges_left_on_survivor: string[];
  survivor_properties_kept: string[];
  evidence: PairEvidence;
}

/** What a merge did, kept with its action for the audit trail (and, for a merge, how to undo it). */
export interface MergeActionDetails extends Partial<UnmergeDetails> {
  edges_repointed?: number;
  edges_removed?: number;
  superseded_candidate_ids?: string[];
  /** Absent on merges applied before issue 31 part 3: those cannot be undone. */
  undo?: MergeUndoRecord;
}

/**
 * The decision taken on a candidate (merged or rejected), by a reviewer or the system (null), and
 * for a merge that was undone its `unmerged` action: at most one of each per candidate.
 */
@Entity('merge_actions')
export class MergeAction {
  @PrimaryGeneratedColumn('uuid') id!: string;
  @Column({ type: 'uuid', name: 'workspace_id' }) workspaceId!: string;
  @Column({ type: 'uuid', name: 'candidate_id' }) candidateId!: string;
  @Column({ type: 'text' }) action!: 'merged' | 'rejected' | 'unmerged';
  @Column({ type: 'uuid', name: 'survivor_node_id' }) survivorNodeId!: string;
  @Column({ type: 'uuid', name: 'duplicate_node_id' }) duplicateNodeId!: string;
  @Column({ type: 'uuid', name: 'performed_by', nullable: true }) performedBy!: string | null;
  @Column({ type: 'text', nullable: true }) notes!: string | null;
  @Column({ type: 'jsonb' }) details!: MergeActionDetails;
  @CreateDateColumn({ type: 'timestamptz', name: 'created_at' }) createdAt!: Date;
}
