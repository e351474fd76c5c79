import { Column, Entity, PrimaryGeneratedColumn } from 'typeorm';
import type { StoredPrincipal } from '../platform/auth/stored-principal';
import type { RunTemplate } from '../runs/schemas';

/** How a note Weft wrote when it paused a schedule begins (a resume clears such a note, never a person's). */
export const WEFT_PAUSE_NOTE = 'Paused by Weft: ';

/** What Temporal does with a fire while the previous one's run is still going (the run, not the action). */
export const OVERLAP_POLICIES = ['skip', 'buffer_one', 'allow', 'cancel_other'] as const;
export type OverlapPolicy = (typeof OVERLAP_POLICIES)[number];

/**
 * A run schedule (issue 26 part 3): when, the run it dispatches, and whom the runs act as (the
 * creator's, or last editor's, user, scopes and credential, frozen as a webhook trigger's are). Its
 * Temporal Schedule is `run-schedule-<id>`; `revision` orders the definitions applied to it.
 */
@Entity('run_schedules')
export class RunSchedule {
  @PrimaryGeneratedColumn('uuid') id!: string;
  @Column({ type: 'uuid', name: 'workspace_id' }) workspaceId!: string;
  @Column({ type: 'text', nullable: true }) cron!: string | null;
  @Column({ type: 'integer', name: 'interval_seconds', nullable: true }) intervalSeconds!: number | null;
  @Column({ type: 'text' }) timezone!: string;
  @Column({ type: 'jsonb', name: 'run_template' }) runTemplate!: RunTemplate;
  @Column({ type: 'text' }) overlap!: OverlapPolicy;
  @Column({ type: 'boolean' }) paused!: boolean;
  @Column({ type: 'text', nullable: true }) note!: string | null;
  @Column({ type: 'jsonb' }) principal!: StoredPrincipal;
  @Column({ type: 'uuid', name: 'created_by' }) createdBy!: string;
  @Column({ type: 'integer' }) revision!: number;
  @Column({ type: 'text', name: 'last_refusal', nullable: true }) lastRefusal!: string | null;
  @Column({ type: 'timestamptz', name: 'last_refused_at', nullable: true }) lastRefusedAt!: Date | null;
  @Column({ type: 'timestamptz', name: 'created_at' }) createdAt!: Date;
  @Column({ type: 'timestamptz', name: 'updated_at' }) updatedAt!: Date;
}
