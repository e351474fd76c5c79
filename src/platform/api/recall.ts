/**
 * The router's recall path (issue 27, docs/request-recall.md): a request served from the principal its
 * credential was found to be a moment ago (`Authenticator.recall`), before this request's own lookup
 * has answered. The lookup becomes the request's CredentialProof (../db/credential-proof.ts), which
 * its first scoped read or unit of work carries in its own message; nothing is answered, and nothing
 * written, before the proof settles.
 */
import type { Context } from 'koa';
import type { Recalled } from '../auth/authenticator';
import type { Principal } from '../auth/principal';
import type { CredentialProof } from '../db/credential-proof';
import { owesCredentialProof, PrincipalChanged } from '../db/credential-proof';
import type { RateLimiter } from './rate-limit';

/**
 * A read answered with a JSON body may start from the principal its credential was found to be a
 * moment ago (never a stream: nothing may leave before the credential is proven live), and so may a
 * write whose units of work wait for that proof (`recallable`), its body a response schema's or JSON
 * the handler sets at once. Never a public route: it has no caller.
 */
export const mayRecall = (route: {
  method: string;
  recallable?: boolean;
  public?: boolean;
  response?: unknown;
  produces?: unknown;
}) =>
  (route.method === 'get' || route.recallable === true) &&
  !route.public &&
  (route.response !== undefined || (route.recallable === true && answersJsonAtOnce(route.produces)));

/** A handler that writes its own body as JSON and nothing else (`POST /mcp`): set at once, never streamed. */
const answersJsonAtOnce = (produces: unknown) =>
  typeof produces === 'object' &&
  produces !== null &&
  !Array.isArray(produces) &&
  Object.keys(produces).length > 0 &&
  Object.keys(produces).every((type) => type === 'application/json');

/** The router's guards, as the recall path uses them. */
export interface RecallGuards {
  /** Counts a refused credential against the request's source address (the router's `guarded`). */
  guarded<T>(attempt: () => Promise<T>): Promise<T>;
  rateLimiter?: RateLimiter;
}

/**
 * A read that starts from a remembered principal (Authenticator.recall) before this request's
 * credential lookup has answered: the lookup rides in the handler's first scoped read (one round
 * trip for both), or runs alone after the handler when it made none. Nothing is answered before
 * it settles: a refused credential answers its 401 (or 404, counted as any refusal), whatever the
 * handler did, and drops the headers the handler set; a credential now found to be someone else
 * (its workspace or scopes changed) serves the request again as what it is, scope checked. A unit
 * of work awaits the proof before it writes (`confirmed`), and refuses to write as the remembered
 * principal once it is found changed: nothing is written twice, or as the wrong principal.
 */
export async function serveRecalled(
  ctx: Context,
  recalled: Recalled,
  guards: RecallGuards,
  serve: (principal: Principal) => Promise<void>,
  serveAgain: (principal: Principal) => Promise<void>,
): Promise<void> {
  let found!: (principal: Principal) => void;
  let refused!: (error: unknown) => void;
  const proven = new Promise<Principal>((resolve, reject) => {
    found = resolve;
    refused = reject;
  });
  const proof: CredentialProof = {
    ...recalled.lookup,
    sent: false,
    settle(row) {
      try {
        found(recalled.prove(row));
      } catch (error) {
        refused(error);
      }
    },
    verdict: guards.guarded(() => proven),
    async confirmed() {
      if (!samePrincipal((await proof.verdict) as Principal, principal)) throw new PrincipalChanged();
    },
  };
  // Awaited below; neither may count as unhandled meanwhile (a 429 refuses before the lookup is read).
  proven.catch(() => {});
  proof.verdict.catch(() => {});
  const proveNow = async (): Promise<Principal> => {
    if (!proof.sent) {
      proof.sent = true;
      recalled.proveAlone().then(found, refused);
    }
    try {
      return (await proof.verdict) as Principal;
    } catch (error) {
      for (const name of Object.keys(ctx.response.headers)) if (!before.has(name)) ctx.remove(name);
      throw error;
    }
  };
  const before = new Set(Object.keys(ctx.response.headers));
  // This request's own copy: the proof rides on it to the scope of its reads (scopeOf).
  const principal: Principal = { ...recalled.principal };
  owesCredentialProof(principal, proof);
  try {
    await guards.rateLimiter?.take(principal.credential, principal.userId);
    await serve(principal);
  } catch (error) {
    const now = await proveNow();
    if (error instanceof PrincipalChanged) return serveAgain(now);
    throw error;
  }
  const now = await proveNow();
  if (!samePrincipal(now, principal)) await serveAgain(now);
}

const samePrincipal = (a: Principal, b: Principal) =>
  a.userId === b.userId &&
  a.workspaceId === b.workspaceId &&
  a.tenantId === b.tenantId &&
  a.credential.kind === b.credential.kind &&
  a.credential.id === b.credential.id &&
  (a.credential.expiresAt?.getTime() ?? null) === (b.credential.expiresAt?.getTime() ?? null) &&
  a.scopes.size === b.scopes.size &&
  [...a.scopes].every((scope) => b.scopes.has(scope));
