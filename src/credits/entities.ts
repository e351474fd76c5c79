import { Column, CreateDateColumn, Entity, PrimaryGeneratedColumn } from 'typeorm';
import type { LedgerKind } from '../rules/costs';

/**
 * How a reservation made before its work ends: `pending` until the work confirms it or it is
 * refunded. NULL for rows that take no part (grants, refunds, the prompt saga's reservations).
 */
export type Settlement = 'pending' | 'confirmed' | 'refunded';

/**
 * One row of the credit ledger: a reservation (negative), its refund (positive, linked by
 * `linkedEventId`) or an operator's grant (positive, tenant-level: no workspace).
 */
@Entity('credit_ledger')
export class CreditLedgerEntry {
  @PrimaryGeneratedColumn('uuid') id!: string;
  @Column({ type: 'uuid', name: 'tenant_id' }) tenantId!: string;
  @Column({ type: 'uuid', name: 'workspace_id', nullable: true }) workspaceId!: string | null;
  @Column({ type: 'text' }) kind!: LedgerKind;
  @Column({ type: 'integer' }) amount!: number;
  @Column({ type: 'uuid', name: 'linked_event_id', nullable: true }) linkedEventId!: string | null;
  @Column({ type: 'text', name: 'idempotency_key', nullable: true }) idempotencyKey!: string | null;
  @Column({ type: 'text', nullable: true }) settlement!: Settlement | null;
  @CreateDateColumn({ type: 'timestamptz', name: 'created_at' }) createdAt!: Date;
}
