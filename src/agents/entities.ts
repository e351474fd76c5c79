import { Column, Entity, PrimaryGeneratedColumn } from 'typeorm';

export type SessionStatus = 'active' | 'ended' | 'expired';
export type SessionOutcome = 'succeeded' | 'failed' | 'cancelled';
export type ClaimStatus = 'active' | 'released' | 'abandoned';

/** An agent's task session: active while it heartbeats, then ended (by its agent) or expired (by the sweeper). */
@Entity('agent_sessions')
export class AgentSession {
  @PrimaryGeneratedColumn('uuid') id!: string;
  @Column({ type: 'uuid', name: 'workspace_id' }) workspaceId!: string;
  @Column({ type: 'uuid', name: 'user_id' }) userId!: string;
  @Column({ type: 'text', nullable: true }) name!: string | null;
  @Column({ type: 'jsonb', default: {} }) metadata!: Record<string, unknown>;
  @Column({ type: 'text', default: 'active' }) status!: SessionStatus;
  @Column({ type: 'text', nullable: true }) outcome!: SessionOutcome | null;
  @Column({ type: 'text', name: 'error_signature', nullable: true }) errorSignature!: string | null;
  @Column({ type: 'timestamptz', name: 'started_at', default: () => 'now()' }) startedAt!: Date;
  @Column({ type: 'timestamptz', name: 'last_heartbeat_at', default: () => 'now()' }) lastHeartbeatAt!: Date;
  @Column({ type: 'timestamptz', name: 'ended_at', nullable: true }) endedAt!: Date | null;
  @Column({ type: 'timestamptz', name: 'clustered_at', nullable: true }) clusteredAt!: Date | null;
}

/** A session's claim on a node (and, through CONTAINS edges, on its ancestors' and descendants' work). */
@Entity('agent_claims')
export class AgentClaim {
  @PrimaryGeneratedColumn('uuid') id!: string;
  @Column({ type: 'uuid', name: 'workspace_id' }) workspaceId!: string;
  @Column({ type: 'uuid', name: 'session_id' }) sessionId!: string;
  @Column({ type: 'uuid', name: 'user_id' }) userId!: string;
  @Column({ type: 'uuid', name: 'target_node_id' }) targetNodeId!: string;
  @Column({ type: 'text' }) intent!: string;
  @Column({ type: 'text', default: 'active' }) status!: ClaimStatus;
  @Column({ type: 'timestamptz', name: 'created_at', default: () => 'now()' }) createdAt!: Date;
  @Column({ type: 'timestamptz', name: 'updated_at', default: () => 'now()' }) updatedAt!: Date;
  @Column({ type: 'timestamptz', name: 'closed_at', nullable: true }) closedAt!: Date | null;
}

/** Failed sessions that share a normalised error signature. */
@Entity('agent_failure_clusters')
export class AgentFailureCluster {
  @PrimaryGeneratedColumn('uuid') id!: string;
  @Column({ type: 'uuid', name: 'workspace_id' }) workspaceId!: string;
  @Column({ type: 'char', length: 64, name: 'signature_hash' }) signatureHash!: string;
  @Column({ type: 'text' }) signature!: string;
  @Column({ type: 'integer' }) count!: number;
  @Column({ type: 'timestamptz', name: 'first_seen' }) firstSeen!: Date;
  @Column({ type: 'timestamptz', name: 'last_seen' }) lastSeen!: Date;
  @Column({ type: 'uuid', array: true, name: 'recent_session_ids', default: () => "'{}'" }) recentSessionIds!: string[];
}
