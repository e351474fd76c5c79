import type { DataSource } from 'typeorm';
import { issueOperatorToken } from '../platform/auth/tokens';
import { NotFoundError } from '../platform/errors';

/**
 * `weft operator token`: a codec token for the Temporal UI and CLI that opens every workspace's
 * payloads. Written on the owner connection, which is what makes someone an operator; the token is
 * shown once and stored as its SHA-256.
 */
export async function mintOperatorToken(owner: DataSource, options: { label: string; days?: number }) {
  const secret = issueOperatorToken();
  const [row]: { id: string; created_at: Date; expires_at: Date | null }[] = await owner.query(
    `INSERT INTO operator_tokens (label, token_hash, prefix, expires_at)
     VALUES ($1, $2, $3, CASE WHEN $4::int IS NULL THEN NULL ELSE now() + make_interval(days => $4::int) END)
     RETURNING id, created_at, expires_at`,
    [options.label, secret.hash, secret.prefix, options.days ?? null],
  );
  return {
    id: row!.id,
    label: options.label,
    token: secret.token,
    created_at: row!.created_at.toISOString(),
    expires_at: row!.expires_at?.toISOString() ?? null,
  };
}

/** `weft operator revoke --id`: the token is refused from its next request on. */
export async function revokeOperatorToken(owner: DataSource, id: string) {
  // TypeORM answers an UPDATE … RETURNING with [rows, affected].
  const [rows]: [{ id: string; revoked_at: Date }[], number] = await owner.query(
    `UPDATE operator_tokens SET revoked_at = coalesce(revoked_at, now()) WHERE id = $1 RETURNING id, revoked_at`,
    [id],
  );
  if (!rows[0]) throw new NotFoundError('Operator token not found');
  return { id: rows[0].id, revoked_at: rows[0].revoked_at.toISOString() };
}
