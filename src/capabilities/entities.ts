import { Column, CreateDateColumn, Entity, PrimaryColumn } from 'typeorm';

/** A write capability's idempotency key: its first request (tool, body hash) and the envelope it answered. */
@Entity('capability_idempotency_keys')
export class CapabilityIdempotencyKey {
  @PrimaryColumn({ type: 'uuid', name: 'workspace_id' }) workspaceId!: string;
  @PrimaryColumn({ type: 'varchar', length: 255, name: 'idempotency_key' }) idempotencyKey!: string;
  @Column({ type: 'text' }) tool!: string;
  @Column({ type: 'char', length: 64, name: 'request_hash' }) requestHash!: string;
  @Column({ type: 'jsonb' }) envelope!: Record<string, unknown>;
  @Column({ type: 'uuid', name: 'user_id' }) userId!: string;
  @CreateDateColumn({ type: 'timestamptz', name: 'created_at' }) createdAt!: Date;
}
