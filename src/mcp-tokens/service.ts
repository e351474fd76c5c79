import { randomUUID } from 'node:crypto';
import type { EntityManager } from 'typeorm';
import type { Credential } from '../api-keys/entities';
import { mintedBy } from '../api-keys/lineage';
import {
  findCredential,
  insertCredential,
  listCredentials,
  revokeCredential,
  toApiKeyRow,
} from '../api-keys/repository';
import type { Principal } from '../platform/auth/principal';
import { childExpiry, scopeOf } from '../platform/auth/principal';
import { MCP_TOKEN_SCOPES } from '../platform/auth/scopes';
import type { JwtService } from '../platform/auth/tokens';
import { sha256Hex } from '../platform/auth/tokens';
import { assertWorkspaceVisible } from '../platform/auth/workspace-visibility';
import type { Config } from '../platform/config';
import type { UnitOfWork } from '../platform/db/unit-of-work';
import { NotFoundError, RateLimitedError } from '../platform/errors';
import { LIMITS } from '../rules/limits';
import { lockUserMints, MINT_NAME, recentMints } from './repository';

/** knowledge-graph-service-api.md §8: minting is limited to 60 requests per minute per user. */
export const MCP_MINT_LIMIT = LIMITS.mcpMint;

const DAY_MS = 24 * 3600 * 1000;

/**
 * MCP tokens are MCP-audience JWTs whose `jti` is a row in the credentials table, so they can be
 * listed, expire, and be revoked like keys. The row keeps only the token's SHA-256.
 */
export function createMcpTokenService(deps: {
  uow: UnitOfWork;
  jwt: JwtService;
  config: Pick<Config, 'MCP_TOKEN_DEFAULT_TTL_DAYS'>;
}) {
  const { uow, jwt, config } = deps;

  async function issue(
    m: EntityManager,
    principal: Principal,
    workspaceId: string,
    name: string,
    ttlDays?: number,
  ): Promise<{ token: string; row: Credential; expiresAt: Date }> {
    const tokenId = randomUUID();
    const requested = new Date(Date.now() + (ttlDays ?? config.MCP_TOKEN_DEFAULT_TTL_DAYS) * DAY_MS);
    // Never outlives the key or token that creates it.
    const expiresAt = childExpiry(principal, requested) ?? requested;
    const token = await jwt.signMcp({ userId: principal.userId, workspaceId, tokenId, expiresAt });
    const row = await insertCredential(m, {
      id: tokenId,
      workspaceId,
      userId: principal.userId,
      kind: 'mcp_token',
      name,
      // Never more than its creator holds (a key with only mcp_tokens:manage mints a token of nothing else).
      scopes: MCP_TOKEN_SCOPES.filter((scope) => principal.scopes.has(scope)),
      prefix: `mcp_${tokenId.slice(0, 8)}`,
      keyHash: sha256Hex(token),
      expiresAt,
      ...mintedBy(principal.credential),
    });
    return { token, row, expiresAt };
  }

  /**
   * The mint limit counts this user's mints in the last window. A per-user advisory lock makes
   * the count-then-insert atomic, and the count lives in Postgres, so it holds across processes.
   */
  async function enforceMintLimit(m: EntityManager, userId: string) {
    await lockUserMints(m, userId);
    const { count, oldest } = await recentMints(m, userId, MCP_MINT_LIMIT.windowSeconds);
    if (count >= MCP_MINT_LIMIT.requests && oldest) {
      const reopensAt = oldest.getTime() + MCP_MINT_LIMIT.windowSeconds * 1000;
      throw new RateLimitedError(Math.max(1, Math.ceil((reopensAt - Date.now()) / 1000)));
    }
  }

  return {
    mint: (principal: Principal, input: { workspace_id: string; expires_in_days?: number }) =>
      uow(scopeOf(principal), async (m) => {
        await assertWorkspaceVisible(m, principal, input.workspace_id);
        await enforceMintLimit(m, principal.userId);
        const { token, row, expiresAt } = await issue(
          m,
          principal,
          input.workspace_id,
          MINT_NAME,
          input.expires_in_days,
        );
        return {
          token,
          token_type: 'Bearer' as const,
          token_id: row.id,
          workspace_id: input.workspace_id,
          expires_at: expiresAt.toISOString(),
          expires_in: Math.round((expiresAt.getTime() - Date.now()) / 1000),
        };
      }),

    create: (principal: Principal, workspaceId: string, input: { name: string; expires_in_days?: number }) =>
      uow(scopeOf(principal), async (m) => {
        await assertWorkspaceVisible(m, principal, workspaceId);
        const { token, row } = await issue(m, principal, workspaceId, input.name, input.expires_in_days);
        return { ...toApiKeyRow(row), token };
      }),

    list: (principal: Principal, workspaceId: string) =>
      uow(scopeOf(principal), async (m) => {
        await assertWorkspaceVisible(m, principal, workspaceId);
        return (await listCredentials(m, { userId: principal.userId, kind: 'mcp_token', workspaceId })).map(
          toApiKeyRow,
        );
      }),

    /** Owner only and idempotent; any other case is 404 (not found, not owned, not an MCP token of that workspace). */
    revoke: (principal: Principal, workspaceId: string, tokenId: string) =>
      uow(scopeOf(principal), async (m) => {
        await assertWorkspaceVisible(m, principal, workspaceId);
        const row = await findCredential(m, { userId: principal.userId, id: tokenId, kind: 'mcp_token' });
        if (!row || row.workspaceId !== workspaceId) throw new NotFoundError('MCP token not found');
        await revokeCredential(m, row);
      }),
  };
}

export type McpTokenService = ReturnType<typeof createMcpTokenService>;
