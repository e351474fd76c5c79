import type { EntityManager } from 'typeorm';
import type { CredentialKind } from './entities';
import { Credential } from './entities';
import type { ApiKeyRow } from './schemas';

export const toApiKeyRow = (row: Credential): ApiKeyRow => ({
  id: row.id,
  kind: row.kind,
  name: row.name,
  scopes: row.scopes,
  prefix: row.prefix,
  workspace_id: row.workspaceId,
  created_at: row.createdAt.toISOString(),
  expires_at: row.expiresAt?.toISOString() ?? null,
  revoked_at: row.revokedAt?.toISOString() ?? null,
  last_used_at: row.lastUsedAt?.toISOString() ?? null,
});

/** Credential rows of one user. RLS already limits them to the scope's user; the filters restate it. */
export const credentials = (m: EntityManager) => ({
  insert: (values: Omit<Credential, 'id' | 'createdAt' | 'revokedAt' | 'lastUsedAt'>) =>
    m.getRepository(Credential).save(m.getRepository(Credential).create(values)),

  listOwned: (userId: string, kind: CredentialKind, workspaceId?: string) =>
    m.getRepository(Credential).find({
      where: { userId, kind, ...(workspaceId ? { workspaceId } : {}) },
      order: { createdAt: 'DESC', id: 'DESC' },
    }),

  findOwned: (userId: string, id: string, kind: CredentialKind) =>
    m.getRepository(Credential).findOneBy({ id, userId, kind }),

  /** Revoking twice keeps the first revocation time. */
  async revoke(row: Credential): Promise<Credential> {
    if (!row.revokedAt) {
      await m.query(`UPDATE api_keys SET revoked_at = now() WHERE id = $1 AND revoked_at IS NULL`, [row.id]);
      return await m.getRepository(Credential).findOneByOrFail({ id: row.id });
    }
    return row;
  },
});
