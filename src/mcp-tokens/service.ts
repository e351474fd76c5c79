import { randomUUID } from 'node:crypto';
import type { EntityManager } from 'typeorm';
import { credentials, toApiKeyRow } from '../api-keys/repository';
import { LIMITS } from '../limits';
import type { Principal } from '../platform/auth/principal';
import { scopeOf } from '../platform/auth/principal';
import { MCP_TOKEN_SCOPES } from '../platform/auth/scopes';
import type { JwtService } from '../platform/auth/tokens';
import { sha256Hex } from '../platform/auth/tokens';
import type { Config } from '../platform/config';
import type { UnitOfWork } from '../platform/db/unit-of-work';
import { NotFoundError, RateLimitedError } from '../platform/errors';
import { assertWorkspaceVisible } from '../tenancy/service';

/** Contract 8: minting is limited to 60 requests per minute per user. */
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

  async function issue(m: EntityManager, principal: Principal, workspaceId: string, name: string, ttlDays?: number) {
    const tokenId = randomUUID();
    const expiresAt = new Date(Date.now() + (ttlDays ?? config.MCP_TOKEN_DEFAULT_TTL_DAYS) * DAY_MS);
    const token = await jwt.signMcp({ userId: principal.userId, workspaceId, tokenId, expiresAt });
    await m.query(
      `INSERT INTO api_keys (id, workspace_id, user_id, kind, name, scopes, prefix, key_hash, expires_at)
       VALUES ($1, $2, $3, 'mcp_token', $4, $5, $6, $7, $8)`,
      [
        tokenId,
        workspaceId,
        principal.userId,
        name,
        // Never more than its creator holds (a key with only mcp_tokens:manage mints a token of nothing else).
        MCP_TOKEN_SCOPES.filter((scope) => principal.scopes.has(scope)),
        `mcp_${tokenId.slice(0, 8)}`,
        sha256Hex(token),
        expiresAt,
      ],
    );
    return { token, tokenId, expiresAt };
  }

  /**
   * The mint limit counts this user's mints in the last window. A per-user advisory lock makes
   * the count-then-insert atomic, and the count lives in Postgres, so it holds across processes.
   */
  async function enforceMintLimit(m: EntityManager, userId: string) {
    await m.query(`SELECT pg_advisory_xact_lock(hashtextextended('mcp-mint:' || $1, 0))`, [userId]);
    const [{ recent, oldest }] = await m.query(
      `SELECT count(*)::int AS recent, min(created_at) AS oldest FROM api_keys
       WHERE user_id = $1 AND kind = 'mcp_token' AND name = 'mcp-mint'
         AND created_at > now() - make_interval(secs => $2)`,
      [userId, MCP_MINT_LIMIT.windowSeconds],
    );
    if (recent >= MCP_MINT_LIMIT.requests) {
      const retryAfter = Math.max(
        1,
        Math.ceil((new Date(oldest).getTime() + MCP_MINT_LIMIT.windowSeconds * 1000 - Date.now()) / 1000),
      );
      throw new RateLimitedError(retryAfter);
    }
  }

  return {
    mint: (principal: Principal, input: { workspace_id: string; expires_in_days?: number }) =>
      uow(scopeOf(principal), async (m) => {
        await assertWorkspaceVisible(m, principal, input.workspace_id);
        await enforceMintLimit(m, principal.userId);
        const issued = await issue(m, principal, input.workspace_id, 'mcp-mint', input.expires_in_days);
        return {
          token: issued.token,
          token_type: 'Bearer' as const,
          token_id: issued.tokenId,
          workspace_id: input.workspace_id,
          expires_at: issued.expiresAt.toISOString(),
          expires_in: Math.round((issued.expiresAt.getTime() - Date.now()) / 1000),
        };
      }),

    create: (principal: Principal, workspaceId: string, input: { name: string; expires_in_days?: number }) =>
      uow(scopeOf(principal), async (m) => {
        await assertWorkspaceVisible(m, principal, workspaceId);
        const issued = await issue(m, principal, workspaceId, input.name, input.expires_in_days);
        const row = await credentials(m).findOwned(principal.userId, issued.tokenId, 'mcp_token');
        return { ...toApiKeyRow(row!), token: issued.token };
      }),

    list: (principal: Principal, workspaceId: string) =>
      uow(scopeOf(principal), async (m) => {
        await assertWorkspaceVisible(m, principal, workspaceId);
        return (await credentials(m).listOwned(principal.userId, 'mcp_token', workspaceId)).map(toApiKeyRow);
      }),

    /** Owner only and idempotent; any other case is 404 (not found, not owned, not an MCP token of that workspace). */
    revoke: (principal: Principal, workspaceId: string, tokenId: string) =>
      uow(scopeOf(principal), async (m) => {
        await assertWorkspaceVisible(m, principal, workspaceId);
        const row = await credentials(m).findOwned(principal.userId, tokenId, 'mcp_token');
        if (!row || row.workspaceId !== workspaceId) throw new NotFoundError('MCP token not found');
        await credentials(m).revoke(row);
      }),
  };
}

export type McpTokenService = ReturnType<typeof createMcpTokenService>;
