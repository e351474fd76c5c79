import type { Context } from 'koa';
import type { DataSource } from 'typeorm';
import { createStatement } from '../db/unit-of-work';
import { NotFoundError, UnauthenticatedError } from '../errors';
import type { Principal } from './principal';
import type { ScopeName } from './scopes';
import { isScope, SCOPES } from './scopes';
import type { JwtService } from './tokens';
import { API_KEY_MARKER, sha256Hex } from './tokens';

/** Turns a request's credential into the principal it acts as (the router calls it before a handler). */
export interface Authenticator {
  authenticate(ctx: Context, requestedWorkspaceId: string | undefined): Promise<Principal>;
}

/**
 * Where the authenticator reports a credential's use (api-keys' usage recorder batches it into the
 * daily usage rows). Called on the request path: it must not wait on I/O.
 */
export interface UsageSink {
  record(use: { credentialId: string; workspaceId: string; userId: string }): void;
}

const ALL_SCOPES: ReadonlySet<ScopeName> = new Set(SCOPES);

/** What `weft_authenticate_key` and `weft_authenticate_mcp` return (migrations/1763780008500-…). */
interface CredentialRow {
  id: string;
  user_id: string;
  workspace_id: string;
  tenant_id: string;
  kind: 'api_key' | 'mcp_token';
  scopes: string[];
  usable: boolean;
  expires_at: Date | null;
}

/** What `weft_authenticate_user` returns: the membership, or nulls and `revoked` for a revoked JWT. */
type MembershipRow = { workspace_id: string; tenant_id: string; revoked: false } | { revoked: true };

function bearerToken(ctx: Context): string | undefined {
  const header = ctx.get('authorization');
  const match = /^Bearer\s+(\S+)\s*$/i.exec(header);
  return match?.[1];
}

/**
 * Turns the Authorization header into a Principal. The credential decides the workspace;
 * a requested `workspace_id` must be one the caller can act in, else 404 (knowledge-graph-service-api.md §5.2).
 * Credentials are looked up on every request, so a revocation holds from the next one.
 */
export function createAuthenticator(deps: {
  dataSource: DataSource;
  jwt: JwtService;
  usage: UsageSink;
}): Authenticator {
  const { jwt, usage } = deps;
  // Each lookup is one statement that scopes itself, outside any unit of work (hot path: no
  // BEGIN/COMMIT); the row type is the function's column list.
  // Straight to the pool: every authenticated request runs one of these, and TypeORM's query runner
  // (made, connected and released for each query) cost more CPU than the statement's own client work.
  const statement = createStatement(deps.dataSource);
  const lookup = async <Row>(sql: string, params: unknown[]): Promise<Row | undefined> => {
    const rows = await statement<Row>(sql, params);
    return rows[0];
  };

  async function fromCredentialRow(row: CredentialRow | undefined, requested: string | undefined): Promise<Principal> {
    if (!row?.usable) throw new UnauthenticatedError('Invalid or revoked credential');
    if (requested && requested !== row.workspace_id) throw new NotFoundError('Workspace not found');
    usage.record({ credentialId: row.id, workspaceId: row.workspace_id, userId: row.user_id });
    return {
      userId: row.user_id,
      workspaceId: row.workspace_id,
      tenantId: row.tenant_id,
      scopes: new Set(row.scopes.filter(isScope)),
      credential: { kind: row.kind, id: row.id, expiresAt: row.expires_at },
    };
  }

  return {
    async authenticate(ctx, requested) {
      const token = bearerToken(ctx);
      if (!token) throw new UnauthenticatedError();

      if (token.startsWith(API_KEY_MARKER)) {
        const row = await lookup<CredentialRow>(`SELECT * FROM weft_authenticate_key($1)`, [sha256Hex(token)]);
        return fromCredentialRow(row, requested);
      }

      const claims = await jwt.verify(token);
      if (!claims) throw new UnauthenticatedError('Invalid token');

      if (claims.audience === 'mcp') {
        const row = await lookup<CredentialRow>(`SELECT * FROM weft_authenticate_mcp($1, $2)`, [
          claims.userId,
          claims.tokenId,
        ]);
        return fromCredentialRow(row, requested);
      }

      const membership = await lookup<MembershipRow>(`SELECT * FROM weft_authenticate_user($1, $2, $3, $4)`, [
        claims.userId,
        requested ?? null,
        claims.workspaceId ?? null,
        claims.tokenId,
      ]);
      if (membership?.revoked) throw new UnauthenticatedError('Invalid or revoked credential');
      if (!membership) throw new NotFoundError('Workspace not found');
      return {
        userId: claims.userId,
        workspaceId: membership.workspace_id,
        tenantId: membership.tenant_id,
        scopes: ALL_SCOPES,
        credential: { kind: 'user_jwt', id: claims.tokenId, expiresAt: claims.expiresAt },
      };
    },
  };
}
