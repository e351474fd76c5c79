import type { ScopeName } from '../platform/auth/scopes';
import { MCP_TOKEN_SCOPES } from '../platform/auth/scopes';

/** An OAuth error (RFC 6749 §5.2): the protocol endpoints answer `{error, error_description}`, not `{detail}`. */
export class OAuthError extends Error {
  constructor(
    readonly error: string,
    readonly description: string,
    readonly status = 400,
  ) {
    super(description);
  }
}

const LOOPBACK_HOSTS = new Set(['127.0.0.1', '[::1]', 'localhost']);

/**
 * A redirect URI a client may register: https; http on a loopback host only (a native app's local
 * listener, RFC 8252 §7.3); or a private-use scheme with a dot (`com.example.app:/cb`, §7.1; Cursor's
 * and VS Code's `cursor://…` are accepted too, as their schemes are). Never a fragment.
 */
export function checkRedirectUri(uri: string): string | undefined {
  let url: URL;
  try {
    url = new URL(uri);
  } catch {
    return `${uri} is not a URL`;
  }
  if (url.hash) return 'A redirect URI has no fragment';
  if (url.protocol === 'https:') return undefined;
  if (url.protocol === 'http:') return LOOPBACK_HOSTS.has(url.hostname) ? undefined : 'http only on a loopback host';
  if (/^(javascript|data|file|vbscript):$/i.test(url.protocol)) return `${url.protocol} is no redirect`;
  return undefined;
}

/**
 * Exact matching of a redirect URI with a registered one, except that a loopback http URI matches
 * on any port (RFC 8252 §7.3: a native app picks a free port each time).
 */
export function redirectMatches(registered: readonly string[], candidate: string): boolean {
  if (registered.includes(candidate)) return true;
  let asked: URL;
  try {
    asked = new URL(candidate);
  } catch {
    return false;
  }
  if (asked.protocol !== 'http:' || !LOOPBACK_HOSTS.has(asked.hostname)) return false;
  return registered.some((uri) => {
    const known = new URL(uri);
    if (known.protocol !== 'http:' || known.hostname !== asked.hostname) return false;
    return known.pathname === asked.pathname && known.search === asked.search;
  });
}

/**
 * The scopes a grant gets: the space-separated ones asked for, each one an MCP token may hold; none
 * asked is every MCP token scope (no approvals, no `*:manage`). Asking only for others is `invalid_scope`.
 */
export function grantedScopes(requested: string | undefined): ScopeName[] {
  const asked = (requested ?? '').split(' ').filter(Boolean);
  if (asked.length === 0) return [...MCP_TOKEN_SCOPES];
  const granted = MCP_TOKEN_SCOPES.filter((scope) => asked.includes(scope));
  if (granted.length === 0) {
    throw new OAuthError('invalid_scope', `None of the scopes asked for is one an MCP token may hold`);
  }
  return granted;
}
