import type { EntityManager } from 'typeorm';
import { IsNull } from 'typeorm';
import { affectedRows, queryRows } from '../platform/db/query';
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
  minted_by: row.mintedByKind ? { kind: row.mintedByKind, id: row.mintedById } : null,
});

export type NewCredential = Pick<
  Credential,
  | 'workspaceId'
  | 'userId'
  | 'kind'
  | 'name'
  | 'scopes'
  | 'prefix'
  | 'keyHash'
  | 'expiresAt'
  | 'mintedByKind'
  | 'mintedById'
> & { id?: string };

/** RLS limits credential rows to the scope's user; the filters below restate it. */
export const insertCredential = (m: EntityManager, values: NewCredential): Promise<Credential> =>
  m.getRepository(Credential).save(m.getRepository(Credential).create(values));

/** One user's credentials of one kind, newest first; `workspaceId` narrows them to one workspace. */
export const listCredentials = (
  m: EntityManager,
  filter: { userId: string; kind: CredentialKind; workspaceId?: string },
): Promise<Credential[]> =>
  m.getRepository(Credential).find({
    where: {
      userId: filter.userId,
      kind: filter.kind,
      ...(filter.workspaceId ? { workspaceId: filter.workspaceId } : {}),
    },
    order: { createdAt: 'DESC', id: 'DESC' },
  });

export const findCredential = (
  m: EntityManager,
  filter: { userId: string; id: string; kind: CredentialKind },
): Promise<Credential | null> => m.getRepository(Credential).findOneBy(filter);

/** Revoking twice keeps the first revocation time. */
export async function revokeCredential(m: EntityManager, row: Credential): Promise<Credential> {
  if (row.revokedAt) return row;
  await m.getRepository(Credential).update({ id: row.id, revokedAt: IsNull() }, { revokedAt: () => 'now()' });
  return m.getRepository(Credential).findOneByOrFail({ id: row.id });
}

/** Requests per UTC day over the last `days` days, oldest first, days without use included as 0. */
export async function dailyRequestCounts(
  m: EntityManager,
  credentialId: string,
  days: number,
): Promise<{ date: string; requests: number }[]> {
  // generate_series fills the days without a usage row, which the query builder cannot say.
  const rows = await queryRows<{ date: string; requests: string }>(
    m,
    `SELECT d::date::text AS date, COALESCE(u.request_count, 0)::text AS requests
     FROM generate_series((now() AT TIME ZONE 'utc')::date - ($2::int - 1), (now() AT TIME ZONE 'utc')::date,
                          interval '1 day') d
     LEFT JOIN api_key_daily_usage u ON u.api_key_id = $1 AND u.day = d::date
     ORDER BY d`,
    [credentialId, days],
  );
  return rows.map((row) => ({ date: row.date, requests: Number(row.requests) }));
}

export interface UsageIncrement {
  credentialId: string;
  workspaceId: string;
  userId: string;
  day: string;
  count: number;
  lastUsedAt: Date;
}

/** Adds a batch of requests to a credential's day and moves `last_used_at` forward (never back). */
export async function addUsage(m: EntityManager, use: UsageIncrement): Promise<void> {
  // An upsert that adds to the stored count, and a GREATEST: both beyond the query builder.
  await affectedRows(
    m,
    `INSERT INTO api_key_daily_usage (api_key_id, day, workspace_id, user_id, request_count)
     VALUES ($1, $2, $3, $4, $5)
     ON CONFLICT (api_key_id, day) DO UPDATE
       SET request_count = api_key_daily_usage.request_count + EXCLUDED.request_count`,
    [use.credentialId, use.day, use.workspaceId, use.userId, use.count],
  );
  await affectedRows(m, `UPDATE api_keys SET last_used_at = GREATEST(COALESCE(last_used_at, $2), $2) WHERE id = $1`, [
    use.credentialId,
    use.lastUsedAt,
  ]);
}
