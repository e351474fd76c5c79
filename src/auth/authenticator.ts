import type { Context } from 'koa';
import type { Authenticator } from '../api/route';
import { notFound, unauthorized } from '../api/errors';
import type { UnitOfWork } from '../db/unit-of-work';
import type { UsageRecorder } from '../api-keys/usage-recorder';
import type { Principal } from './principal';
import { SCOPES, isScope, type ScopeName } from './scopes';
import { API_KEY_MARKER, sha256Hex, type JwtService } from './tokens';

const ALL_SCOPES: ReadonlySet<ScopeName> = new Set(SCOPES);

interface CredentialRow {
  id: string;
  user_id: string;
  workspace_id: string;
  tenant_id: string;
  kind: 'api_key' | 'mcp_token';
  scopes: string[];
  usable: boolean;
}

// One statement answers "does this credential exist, is it live, and is its user still a member".
const CREDENTIAL_COLUMNS = `
  k.id, k.user_id, k.workspace_id, w.tenant_id, k.kind, k.scopes,
  (k.revoked_at IS NULL AND (k.expires_at IS NULL OR k.expires_at > now())) AS usable`;

function bearerToken(ctx: Context): string | undefined {
  const header = ctx.get('authorization');
  const match = /^Bearer\s+(\S+)\s*$/i.exec(header);
  return match?.[1];
}

/**
 * Turns the Authorization header into a Principal. The credential decides the workspace;
 * a requested `workspace_id` must be one the caller can act in, else 404 (contract 5.2).
 * Credentials are looked up on every request, so a revocation holds from the next one.
 */
export function createAuthenticator(deps: { uow: UnitOfWork; jwt: JwtService; usage: UsageRecorder }): Authenticator {
  const { uow, jwt, usage } = deps;

  async function fromCredentialRow(row: CredentialRow | undefined, requested: string | undefined): Promise<Principal> {
    if (!row || !row.usable) throw unauthorized('Invalid or revoked credential');
    if (requested && requested !== row.workspace_id) throw notFound('Workspace not found');
    usage.record({ credentialId: row.id, workspaceId: row.workspace_id, userId: row.user_id });
    return {
      userId: row.user_id,
      workspaceId: row.workspace_id,
      tenantId: row.tenant_id,
      scopes: new Set(row.scopes.filter(isScope)),
      credential: { kind: row.kind, id: row.id },
    };
  }

  return {
    async authenticate(ctx, requested) {
      const token = bearerToken(ctx);
      if (!token) throw unauthorized();

      if (token.startsWith(API_KEY_MARKER)) {
        const keyHash = sha256Hex(token);
        const [row] = await uow({ keyHash }, (m) =>
          m.query(
            `SELECT ${CREDENTIAL_COLUMNS} FROM api_keys k JOIN workspaces w ON w.id = k.workspace_id
             WHERE k.key_hash = $1 AND k.kind = 'api_key'`,
            [keyHash],
          ),
        );
        return fromCredentialRow(row, requested);
      }

      const claims = await jwt.verify(token);
      if (!claims) throw unauthorized('Invalid token');

      if (claims.audience === 'mcp') {
        const [row] = await uow({ userId: claims.userId }, (m) =>
          m.query(
            `SELECT ${CREDENTIAL_COLUMNS} FROM api_keys k
             JOIN workspaces w ON w.id = k.workspace_id
             JOIN memberships ms ON ms.workspace_id = k.workspace_id AND ms.user_id = k.user_id
             WHERE k.id = $1 AND k.kind = 'mcp_token' AND k.user_id = $2`,
            [claims.tokenId, claims.userId],
          ),
        );
        return fromCredentialRow(row, requested);
      }

      // A user JWT acts in the requested workspace, else the one it was issued for, else the default.
      const [membership] = await uow({ userId: claims.userId }, (m) =>
        m.query(
          `SELECT ms.workspace_id, w.tenant_id FROM memberships ms JOIN workspaces w ON w.id = ms.workspace_id
           WHERE ms.user_id = $1 AND ($2::uuid IS NULL OR ms.workspace_id = $2::uuid)
           ORDER BY (ms.workspace_id = $3::uuid) DESC NULLS LAST, ms.is_default DESC, ms.created_at
           LIMIT 1`,
          [claims.userId, requested ?? null, claims.workspaceId ?? null],
        ),
      );
      if (!membership) throw notFound('Workspace not found');
      return {
        userId: claims.userId,
        workspaceId: membership.workspace_id,
        tenantId: membership.tenant_id,
        scopes: ALL_SCOPES,
        credential: { kind: 'user_jwt' },
      };
    },
  };
}
