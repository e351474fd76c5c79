import type { Principal } from '../platform/auth/principal';
import { scopeOf } from '../platform/auth/principal';
import { normalizeScopes, SCOPES } from '../platform/auth/scopes';
import { issueApiKeySecret } from '../platform/auth/tokens';
import type { UnitOfWork } from '../platform/db/unit-of-work';
import { ForbiddenError, NotFoundError } from '../platform/errors';
import { assertWorkspaceVisible } from '../tenancy/service';
import { credentials, toApiKeyRow } from './repository';
import type { UsageRecorder } from './usage-recorder';

const DAY_MS = 24 * 3600 * 1000;

export function createApiKeyService(deps: { uow: UnitOfWork; usage: UsageRecorder }) {
  const { uow, usage } = deps;

  return {
    scopes: () => [...SCOPES].sort(),

    async create(
      principal: Principal,
      input: { name: string; scopes: string[]; workspace?: string; expires_in_days?: number },
    ) {
      const workspaceId = input.workspace ?? principal.workspaceId;
      const scopes = normalizeScopes(input.scopes);
      // A key can hand out only what its caller holds; a user JWT holds every scope.
      const beyond = scopes.filter((scope) => !principal.scopes.has(scope));
      if (beyond.length > 0) throw new ForbiddenError(`Cannot grant scopes the caller lacks: ${beyond.join(', ')}`);
      const secret = issueApiKeySecret();
      const row = await uow(scopeOf(principal), async (m) => {
        await assertWorkspaceVisible(m, principal, workspaceId);
        return credentials(m).insert({
          workspaceId,
          userId: principal.userId,
          kind: 'api_key',
          name: input.name,
          scopes,
          prefix: secret.prefix,
          keyHash: secret.hash,
          expiresAt: input.expires_in_days ? new Date(Date.now() + input.expires_in_days * DAY_MS) : null,
        });
      });
      return { ...toApiKeyRow(row), token: secret.token };
    },

    list: (principal: Principal) =>
      uow(scopeOf(principal), async (m) =>
        (await credentials(m).listOwned(principal.userId, 'api_key')).map(toApiKeyRow),
      ),

    get: (principal: Principal, id: string) =>
      uow(scopeOf(principal), async (m) => {
        const row = await credentials(m).findOwned(principal.userId, id, 'api_key');
        if (!row) throw new NotFoundError('API key not found');
        return toApiKeyRow(row);
      }),

    /** Idempotent; the request that revokes completes, the next one with that key gets 401. */
    revoke: (principal: Principal, id: string) =>
      uow(scopeOf(principal), async (m) => {
        const row = await credentials(m).findOwned(principal.userId, id, 'api_key');
        if (!row) throw new NotFoundError('API key not found');
        return toApiKeyRow(await credentials(m).revoke(row));
      }),

    async usage(principal: Principal, id: string, days: number) {
      await usage.flush();
      return uow(scopeOf(principal), async (m) => {
        const row = await credentials(m).findOwned(principal.userId, id, 'api_key');
        if (!row) throw new NotFoundError('API key not found');
        const series: { date: string; requests: string }[] = await m.query(
          `SELECT d::date::text AS date, COALESCE(u.request_count, 0) AS requests
           FROM generate_series((now() AT TIME ZONE 'utc')::date - ($2::int - 1), (now() AT TIME ZONE 'utc')::date, interval '1 day') d
           LEFT JOIN api_key_daily_usage u ON u.api_key_id = $1 AND u.day = d::date
           ORDER BY d`,
          [id, days],
        );
        const daily = series.map((point) => ({ date: point.date, requests: Number(point.requests) }));
        return {
          api_key_id: id,
          days,
          total_requests: daily.reduce((sum, point) => sum + point.requests, 0),
          last_used_at: row.lastUsedAt?.toISOString() ?? null,
          daily,
        };
      });
    },
  };
}

export type ApiKeyService = ReturnType<typeof createApiKeyService>;
