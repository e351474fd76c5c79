import { Column, CreateDateColumn, Entity, PrimaryColumn, PrimaryGeneratedColumn } from 'typeorm';

export type TypeKind = 'node' | 'edge';

/** One node or edge type of a workspace (knowledge-graph-service-api.md §2.3); counts belong to the daily recompute. */
@Entity('type_catalog')
export class TypeCatalogEntry {
  @PrimaryColumn({ type: 'uuid', name: 'workspace_id' }) workspaceId!: string;
  @PrimaryColumn({ type: 'text' }) kind!: TypeKind;
  @PrimaryColumn({ type: 'text' }) name!: string;
  @Column({ type: 'text', name: 'display_name', nullable: true }) displayName!: string | null;
  @Column({ type: 'text', nullable: true }) description!: string | null;
  // bigint arrives as a string from pg; a workspace's row count stays far below 2^53.
  @Column({
    type: 'bigint',
    name: 'row_count',
    transformer: { to: (v: number) => v, from: (v: string) => Number(v) },
  })
  rowCount!: number;
  @Column({ type: 'timestamptz', name: 'last_seen_at', nullable: true }) lastSeenAt!: Date | null;
  @Column({ type: 'text', name: 'common_property_keys', array: true }) commonPropertyKeys!: string[];
  @Column({ type: 'jsonb', nullable: true }) properties!: Record<string, unknown> | null;
  @Column({ type: 'boolean', name: 'is_deleted' }) isDeleted!: boolean;
  @CreateDateColumn({ type: 'timestamptz', name: 'created_at' }) createdAt!: Date;
  @Column({ type: 'timestamptz', name: 'updated_at' }) updatedAt!: Date;
}

/**
 * The workspace's event log (`events`): facts worth keeping that are not side effects (those go
 * through the outbox). The catalog recompute's `type_stats_refresh` is its writer today.
 */
@Entity('events')
export class WorkspaceEvent {
  // bigserial: pg returns it as a string.
  @PrimaryGeneratedColumn({ type: 'bigint' }) id!: string;
  @Column({ type: 'uuid', name: 'workspace_id' }) workspaceId!: string;
  @Column({ type: 'text', name: 'event_type' }) eventType!: string;
  @Column({ type: 'jsonb' }) payload!: object;
  @CreateDateColumn({ type: 'timestamptz', name: 'created_at' }) createdAt!: Date;
}
