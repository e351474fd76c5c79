import { Column, Entity, PrimaryColumn } from 'typeorm';

/** A user JWT refused before its expiry (`weft tokens revoke`); the row may go once `expiresAt` passes. */
@Entity('revoked_tokens')
export class RevokedToken {
  @PrimaryColumn({ type: 'uuid' }) jti!: string;
  @Column({ type: 'timestamptz', name: 'expires_at' }) expiresAt!: Date;
  @Column({ type: 'timestamptz', name: 'revoked_at', default: () => 'now()' }) revokedAt!: Date;
}
