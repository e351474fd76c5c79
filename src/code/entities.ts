import { Column, Entity, PrimaryColumn } from 'typeorm';

/**
 * A code symbol's stable key within a repository and the node it maps to (migration
 * 1763780009200-code-graph). Written by raw SQL in bulk (src/code/repository.ts).
 */
@Entity('code_symbols')
export class CodeSymbol {
  @PrimaryColumn({ type: 'uuid', name: 'workspace_id' }) workspaceId!: string;
  @PrimaryColumn({ type: 'text' }) repo!: string;
  @PrimaryColumn({ type: 'text' }) key!: string;
  @Column({ type: 'uuid', name: 'node_id' }) nodeId!: string;
  @Column({ type: 'uuid', name: 'seen_run' }) seenRun!: string;
  @Column({ type: 'timestamptz', name: 'updated_at' }) updatedAt!: Date;
}
