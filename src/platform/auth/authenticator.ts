import type { Context } from 'koa';
import type { DataSource } from 'typeorm';
import { LIMITS } from '../../rules/limits';
import { createStatement } from '../db/unit-of-work';
import { NotFoundError, UnauthenticatedError } from '../errors';
import type { Principal } from './principal';
import type { ScopeName } from './scopes';
import { isScope, SCOPES } from './scopes';
import type { JwtService } from './tokens';
import { API_KEY_MARKER, sha256Hex } from './tokens';

/** Turns a request's credential into the principal it acts as (the router calls it before a handler). */
export interface Authenticator {
  authenticate(ctx: Context, requested: string | undefined): Promise<Principal>;
  /**
   * For a read: the principal this credential was found to be a moment ago, with the lookup that
   * proves it is still live (undefined when none is remembered). The caller must not answer before
   * `prove` settled from that lookup (credential-proof.ts): a remembered principal is a guess only.
   */
  recall?(ctx: Context, requested: string | undefined): Promise<Recalled | undefined>;
}

/** A remembered principal and the credential lookup that must confirm it. */
export interface Recalled {
  principal: Principal;
  lookup: { sql: string; params: unknown[] };
  /** The principal the lookup's row proves (throws the 401 or 404 it refuses with). */
  prove(row: unknown): Principal;
  /** Runs the lookup alone and proves its row. */
  proveAlone(): Promise<Principal>;
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
  expires_at: Date | string | null;
}

/** What `weft_authenticate_user` returns: the membership, or nulls and `revoked` for a revoked JWT. */
type MembershipRow = { workspace_id: string; tenant_id: string; revoked: false } | { revoked: true };

function bearerToken(ctx: Context): string | undefined {
  const header = ctx.get('authorization');
  const match = /^Bearer\s+(\S+)\s*$/i.exec(header);
  return match?.[1];
}

/** A credential's lookup, and what its row means. */
interface Prepared {
  /** The remembered principal's key: the credential (hashed) and the workspace asked for. */
  key: string;
  sql: string;
  params: unknown[];
  prove(row: unknown): Principal;
}

/** Rows from the pool carry Dates; rows read back through JSON (credential-proof.ts) carry ISO strings. */
const asDate = (value: Date | string | null | undefined): Date | null => (value ? new Date(value) : null);

/**
 * Turns the Authorization header into a Principal. The credential decides the workspace;
 * a requested `workspace_id` must be one the caller can act in, else 404 (knowledge-graph-service-api.md §5.2).
 * Credentials are looked up on every request, so a revocation holds from the next one: a read may
 * start from the principal remembered from this credential's last lookup (`recall`), but its
 * answer waits for the lookup of this request, which rides in the read's own statement.
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
  // Principals found lately, by credential: guesses for `recall`, never an answer on their own.
  const remembered = new Map<string, { principal: Principal; at: number }>();
  const remember = (key: string, principal: Principal) => {
    remembered.delete(key);
    if (remembered.size >= LIMITS.auth.recalled.entries) remembered.delete(remembered.keys().next().value!);
    remembered.set(key, { principal, at: Date.now() });
    return principal;
  };

  function fromCredentialRow(row: CredentialRow | undefined, requested: string | undefined): Principal {
    if (!row?.usable) throw new UnauthenticatedError('Invalid or revoked credential');
    if (requested && requested !== row.workspace_id) throw new NotFoundError('Workspace not found');
    usage.record({ credentialId: row.id, workspaceId: row.workspace_id, userId: row.user_id });
    return {
      userId: row.user_id,
      workspaceId: row.workspace_id,
      tenantId: row.tenant_id,
      scopes: new Set(row.scopes.filter(isScope)),
      credential: { kind: row.kind, id: row.id, expiresAt: asDate(row.expires_at) },
    };
  }

  async function prepare(ctx: Context, requested: string | undefined): Promise<Prepared> {
    const token = bearerToken(ctx);
    if (!token) throw new UnauthenticatedError();
    const key = `${requested ?? ''} ${sha256Hex(token)}`;

    if (token.startsWith(API_KEY_MARKER)) {
      return {
        key,
        sql: `SELECT * FROM weft_authenticate_key($1)`,
        params: [sha256Hex(token)],
        prove: (row) => fromCredentialRow(row as CredentialRow | undefined, requested),
      };
    }

    const claims = await jwt.verify(token);
    if (!claims) throw new UnauthenticatedError('Invalid token');

    // RFC 8707: an OAuth access token names the resource it was issued for (`/mcp`), and is a
    // credential there only; a REST route is not that resource (review NL-2).
    if (claims.resource !== undefined && new URL(claims.resource).pathname !== ctx.path) {
      throw new UnauthenticatedError(`This token was issued for ${claims.resource} only`);
    }

    if (claims.audience === 'mcp') {
      return {
        key,
        sql: `SELECT * FROM weft_authenticate_mcp($1, $2)`,
        params: [claims.userId, claims.tokenId],
        prove: (row) => fromCredentialRow(row as CredentialRow | undefined, requested),
      };
    }

    return {
      key,
      sql: `SELECT * FROM weft_authenticate_user($1, $2, $3, $4)`,
      params: [claims.userId, requested ?? null, claims.workspaceId ?? null, claims.tokenId],
      prove: (row) => {
        const membership = row as MembershipRow | undefined;
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

  const lookUp = async (prepared: Prepared) => {
    const [row] = await statement(prepared.sql, prepared.params);
    return remember(prepared.key, prepared.prove(row));
  };

  return {
    async authenticate(ctx, requested) {
      return lookUp(await prepare(ctx, requested));
    },

    async recall(ctx, requested) {
      const prepared = await prepare(ctx, requested);
      const last = remembered.get(prepared.key);
      if (!last || Date.now() - last.at > LIMITS.auth.recalled.seconds * 1000) return undefined;
      return {
        principal: last.principal,
        lookup: { sql: prepared.sql, params: prepared.params },
        prove: (row) => remember(prepared.key, prepared.prove(row)),
        proveAlone: () => lookUp(prepared),
      };
    },
  };
}
