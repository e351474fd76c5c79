import { Column, CreateDateColumn, Entity, PrimaryGeneratedColumn } from 'typeorm';

/** A side effect waiting to leave (or that left) after the transaction that wrote it committed. */
@Entity('outbox')
export class OutboxEvent {
  // bigserial: pg hands bigint back as a string.
  @PrimaryGeneratedColumn({ type: 'bigint' }) id!: string;
  @Column({ type: 'uuid', name: 'workspace_id' }) workspaceId!: string;
  @Column({ type: 'text', name: 'event_type' }) eventType!: string;
  @Column({ type: 'uuid', name: 'aggregate_id' }) aggregateId!: string;
  // Any JSON object; handlers read it through OutboxMessage.
  @Column({ type: 'jsonb' }) payload!: object;
  @CreateDateColumn({ type: 'timestamptz', name: 'created_at' }) createdAt!: Date;
  @Column({ type: 'timestamptz', name: 'dispatched_at', nullable: true }) dispatchedAt!: Date | null;
  @Column({ type: 'integer', default: 0 }) attempts!: number;
  @Column({ type: 'text', name: 'last_error', nullable: true }) lastError!: string | null;
  /** A failed row waits until then (exponential backoff) before its next attempt. */
  @Column({ type: 'timestamptz', name: 'next_attempt_at', default: () => 'now()' }) nextAttemptAt!: Date;
  /** Set once the row failed its maximum attempts: never retried, kept for an operator. */
  @Column({ type: 'timestamptz', name: 'dead_lettered_at', nullable: true }) deadLetteredAt!: Date | null;
}
