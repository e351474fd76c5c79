import { Column, Entity, PrimaryColumn } from 'typeorm';

/**
 * A workspace's overrides of the ontology settings (knowledge-graph-service-api.md §2.7); defaults live in code
 * (schemas.ts).
 */
@Entity('workspace_settings')
export class WorkspaceSettings {
  @PrimaryColumn({ type: 'uuid', name: 'workspace_id' }) workspaceId!: string;
  @Column({ type: 'jsonb' }) search!: object;
  @Column({ type: 'jsonb' }) importance!: object;
  @Column({ type: 'jsonb' }) resolver!: object;
  @Column({ type: 'jsonb' }) staging!: object;
  @Column({ type: 'timestamptz', name: 'updated_at' }) updatedAt!: Date;
}
