import type { EntityManager } from 'typeorm';
import type { Principal } from '../platform/auth/principal';
import { boundWorkspace, childExpiry, scopeOf } from '../platform/auth/principal';
import { normalizeScopes, OPERATOR_SCOPE, SCOPES } from '../platform/auth/scopes';
import { issueApiKeySecret } from '../platform/auth/tokens';
import { assertWorkspaceVisible } from '../platform/auth/workspace-visibility';
import type { UnitOfWork } from '../platform/db/unit-of-work';
import { ForbiddenError, NotFoundError, ValidationFailedError } from '../platform/errors';
import { mintedBy } from './lineage';
import {
  dailyRequestCounts,
  findCredential,
  insertCredential,
  listCredentials,
  revokeCredential,
  toApiKeyRow,
} from './repository';
import type { UsageRecorder } from './usage-recorder';

const DAY_MS = 24 * 3600 * 1000;

export function createApiKeyService(deps: { uow: UnitOfWork; usage: UsageRecorder }) {
  const { uow, usage } = deps;

  /** One of the caller's keys; a key-authenticated caller reaches only its own workspace's (else 404). */
  async function ownKey(m: EntityManager, principal: Principal, id: string) {
    const row = await findCredential(m, { userId: principal.userId, id, kind: 'api_key' });
    const bound = boundWorkspace(principal);
    if (!row || (bound && row.workspaceId !== bound)) throw new NotFoundError('API key not found');
    return row;
  }

  return {
    scopes: () => [...SCOPES].sort(),

    async create(
      principal: Principal,
      input: { name: string; scopes: string[]; workspace?: string; expires_in_days?: number },
    ) {
      const workspaceId = input.workspace ?? principal.workspaceId;
      // Said out loud rather than dropped as unknown: the codec scope opens every workspace's payloads.
      if (input.scopes.includes(OPERATOR_SCOPE)) {
        throw new ValidationFailedError([
          {
            loc: ['body', 'scopes'],
            msg: `${OPERATOR_SCOPE} is an operator's: mint an operator token with \`weft operator token\``,
            type: 'operator_scope',
          },
        ]);
      }
      const scopes = normalizeScopes(input.scopes);
      // A key can hand out only what its caller holds; a user JWT holds every scope.
      const beyond = scopes.filter((scope) => !principal.scopes.has(scope));
      if (beyond.length > 0) throw new ForbiddenError(`Cannot grant scopes the caller lacks: ${beyond.join(', ')}`);
      const secret = issueApiKeySecret();
      const row = await uow(scopeOf(principal), async (m) => {
        await assertWorkspaceVisible(m, principal, workspaceId);
        return insertCredential(m, {
          workspaceId,
          userId: principal.userId,
          kind: 'api_key',
          name: input.name,
          scopes,
          prefix: secret.prefix,
          keyHash: secret.hash,
          expiresAt: childExpiry(
            principal,
            input.expires_in_days ? new Date(Date.now() + input.expires_in_days * DAY_MS) : null,
          ),
          ...mintedBy(principal.credential),
        });
      });
      return { ...toApiKeyRow(row), token: secret.token };
    },

    list: (principal: Principal) =>
      uow(scopeOf(principal), async (m) =>
        (
          await listCredentials(m, {
            userId: principal.userId,
            kind: 'api_key',
            workspaceId: boundWorkspace(principal),
          })
        ).map(toApiKeyRow),
      ),

    get: (principal: Principal, id: string) =>
      uow(scopeOf(principal), async (m) => {
        const row = await ownKey(m, principal, id);
        return toApiKeyRow(row);
      }),

    /** Idempotent; the request that revokes completes, the next one with that key gets 401. */
    revoke: (principal: Principal, id: string) =>
      uow(scopeOf(principal), async (m) => {
        const row = await ownKey(m, principal, id);
        return toApiKeyRow(await revokeCredential(m, row));
      }),

    async usage(principal: Principal, id: string, days: number) {
      await usage.flush();
      return uow(scopeOf(principal), async (m) => {
        const row = await ownKey(m, principal, id);
        const daily = await dailyRequestCounts(m, id, days);
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
