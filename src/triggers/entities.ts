import { Column, Entity, PrimaryGeneratedColumn } from 'typeorm';
import type { FilterResult } from '../filters/filter';
import type { StoredPrincipal } from '../platform/auth/stored-principal';
import type { RunTemplate } from '../runs/schemas';
import type { SignatureScheme } from './schemes';

/**
 * What a trigger's (and a run schedule's) runs act as: its creator's user, scopes and credential,
 * frozen at creation (platform/auth/stored-principal.ts).
 */
export type TriggerPrincipal = StoredPrincipal;

/** A webhook trigger: a slug (unique across workspaces), a sealed HMAC secret, a filter and a run template. */
@Entity('webhook_triggers')
export class WebhookTrigger {
  @PrimaryGeneratedColumn('uuid') id!: string;
  @Column({ type: 'uuid', name: 'workspace_id' }) workspaceId!: string;
  @Column({ type: 'text' }) slug!: string;
  @Column({ type: 'boolean' }) enabled!: boolean;
  @Column({ type: 'text', name: 'secret_sealed' }) secretSealed!: string;
  @Column({ type: 'text', name: 'previous_secret_sealed', nullable: true }) previousSecretSealed!: string | null;
  @Column({ type: 'timestamptz', name: 'previous_secret_expires_at', nullable: true })
  previousSecretExpiresAt!: Date | null;
  @Column({ type: 'text', name: 'signature_scheme' }) signatureScheme!: SignatureScheme;
  @Column({ type: 'text', name: 'filter_expression', nullable: true }) filterExpression!: string | null;
  @Column({ type: 'jsonb', name: 'run_template' }) runTemplate!: RunTemplate;
  @Column({ type: 'jsonb' }) principal!: TriggerPrincipal;
  @Column({ type: 'uuid', name: 'created_by' }) createdBy!: string;
  @Column({ type: 'timestamptz', name: 'created_at' }) createdAt!: Date;
  @Column({ type: 'timestamptz', name: 'updated_at' }) updatedAt!: Date;
  /** Intake requests refused for rate, counted in batches (bigint, read as text). */
  @Column({ type: 'bigint', name: 'rate_limited_count' }) rateLimitedCount!: string;
  @Column({ type: 'timestamptz', name: 'rate_limited_at', nullable: true }) rateLimitedAt!: Date | null;
  /** Why the intake suspended (disabled) it, and when: its filter kept running out of its budget (issue 43). */
  @Column({ type: 'text', name: 'suspended_reason', nullable: true }) suspendedReason!: string | null;
  @Column({ type: 'timestamptz', name: 'suspended_at', nullable: true }) suspendedAt!: Date | null;
}

/** One inbound request to a known slug, whatever its outcome (contract 4.6 rule 5). */
@Entity('webhook_deliveries')
export class WebhookDelivery {
  @PrimaryGeneratedColumn('uuid') id!: string;
  @Column({ type: 'uuid', name: 'workspace_id' }) workspaceId!: string;
  @Column({ type: 'uuid', name: 'trigger_id' }) triggerId!: string;
  @Column({ type: 'timestamptz', name: 'received_at' }) receivedAt!: Date;
  @Column({ type: 'jsonb' }) headers!: [string, string][];
  @Column({ type: 'bytea', nullable: true }) body!: Buffer | null;
  @Column({ type: 'integer', name: 'status_code' }) statusCode!: number;
  @Column({ type: 'text', nullable: true }) reason!: string | null;
  @Column({ type: 'text', name: 'filter_result', nullable: true }) filterResult!: FilterResult | null;
  @Column({ type: 'text', name: 'filter_error', nullable: true }) filterError!: string | null;
  @Column({ type: 'text', name: 'idempotency_key', nullable: true }) idempotencyKey!: string | null;
  @Column({ type: 'uuid', name: 'execution_id', nullable: true }) executionId!: string | null;
  @Column({ type: 'uuid', name: 'duplicate_of', nullable: true }) duplicateOf!: string | null;
  @Column({ type: 'uuid', name: 'redelivery_of', nullable: true }) redeliveryOf!: string | null;
  @Column({ type: 'integer', name: 'body_size', nullable: true }) bodySize!: number | null;
  @Column({ type: 'text', name: 'body_sha256', nullable: true }) bodySha256!: string | null;
  @Column({ type: 'bigint', name: 'signed_t', nullable: true }) signedT!: string | null;
}
