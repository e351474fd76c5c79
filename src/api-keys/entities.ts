import { Column, CreateDateColumn, Entity, PrimaryColumn, PrimaryGeneratedColumn } from 'typeorm';

export type CredentialKind = 'api_key' | 'mcp_token';

/** What minted a key or token (NM-5): a person's session, another key or token, a grant, or provisioning. */
export type MintedByKind = 'user_jwt' | 'api_key' | 'mcp_token' | 'oauth_grant' | 'provisioning';

/** API keys and MCP tokens: one table, told apart by `kind`. Only the SHA-256 of a secret is kept. */
@Entity('api_keys')
export class Credential {
  @PrimaryGeneratedColumn('uuid') id!: string;
  @Column({ type: 'uuid', name: 'workspace_id' }) workspaceId!: string;
  @Column({ type: 'uuid', name: 'user_id' }) userId!: string;
  @Column({ type: 'text' }) kind!: CredentialKind;
  @Column({ type: 'text' }) name!: string;
  @Column({ type: 'text', array: true }) scopes!: string[];
  @Column({ type: 'text' }) prefix!: string;
  @Column({ type: 'char', length: 64, name: 'key_hash' }) keyHash!: string;
  @CreateDateColumn({ type: 'timestamptz', name: 'created_at' }) createdAt!: Date;
  @Column({ type: 'timestamptz', name: 'expires_at', nullable: true }) expiresAt!: Date | null;
  @Column({ type: 'timestamptz', name: 'revoked_at', nullable: true }) revokedAt!: Date | null;
  @Column({ type: 'timestamptz', name: 'last_used_at', nullable: true }) lastUsedAt!: Date | null;
  /** Null for a row made before the column, whose minter is not known. */
  @Column({ type: 'text', name: 'minted_by_kind', nullable: true }) mintedByKind!: MintedByKind | null;
  /** The minting JWT's jti, key's or token's id, or grant's id; null for provisioning. */
  @Column({ type: 'text', name: 'minted_by_id', nullable: true }) mintedById!: string | null;
}

@Entity('api_key_daily_usage')
export class CredentialDailyUsage {
  @PrimaryColumn({ type: 'uuid', name: 'api_key_id' }) apiKeyId!: string;
  @PrimaryColumn({ type: 'date' }) day!: string;
  @Column({ type: 'uuid', name: 'workspace_id' }) workspaceId!: string;
  @Column({ type: 'uuid', name: 'user_id' }) userId!: string;
  @Column({
    type: 'bigint',
    name: 'request_count',
    transformer: { to: (v: number) => v, from: (v: string) => Number(v) },
  })
  requestCount!: number;
}
