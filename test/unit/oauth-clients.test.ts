import { expect } from 'chai';
import { checkRedirectUri, grantedScopes, OAuthError, redirectMatches } from '../../src/oauth/clients';
import { MCP_TOKEN_SCOPES } from '../../src/platform/auth/scopes';

describe('OAuth clients: redirect URIs and scopes (pure rules)', () => {
  it('registers https, loopback http and app schemes; never plain http elsewhere, a fragment or javascript:', () => {
    for (const ok of [
      'https://claude.ai/api/mcp/auth_callback',
      'http://127.0.0.1:6274/oauth/callback',
      'http://localhost:6274/oauth/callback',
      'http://[::1]:8000/cb',
      'cursor://anysphere.cursor-retrieval/oauth/callback',
      'com.example.app:/oauth2redirect',
    ]) {
      expect(checkRedirectUri(ok), ok).to.equal(undefined);
    }
    for (const bad of ['http://example.com/cb', 'https://a.example/cb#x', 'javascript:alert(1)', 'not a url']) {
      expect(checkRedirectUri(bad), bad).to.be.a('string');
    }
  });

  it('matches exactly, except a loopback http URI on any port (RFC 8252 §7.3)', () => {
    const registered = ['http://127.0.0.1:43110/callback', 'https://app.example/cb'];
    expect(redirectMatches(registered, 'https://app.example/cb')).to.equal(true);
    expect(redirectMatches(registered, 'http://127.0.0.1:51000/callback')).to.equal(true);
    expect(redirectMatches(registered, 'http://127.0.0.1/callback')).to.equal(true);
    // Another path, query, host or scheme is another URI.
    expect(redirectMatches(registered, 'http://127.0.0.1:51000/other')).to.equal(false);
    expect(redirectMatches(registered, 'http://127.0.0.1:51000/callback?x=1')).to.equal(false);
    expect(redirectMatches(registered, 'http://localhost:43110/callback')).to.equal(false);
    expect(redirectMatches(registered, 'https://app.example:8443/cb')).to.equal(false);
    expect(redirectMatches(registered, 'https://app.example/cb/')).to.equal(false);
  });

  it('grants what was asked of the MCP token scopes, all of them for nothing asked, and refuses only-others', () => {
    expect(grantedScopes(undefined)).to.deep.equal(MCP_TOKEN_SCOPES);
    expect(grantedScopes('ontology:read approvals:write')).to.deep.equal(['ontology:read']);
    expect(() => grantedScopes('approvals:write mcp_tokens:manage'))
      .to.throw(OAuthError)
      .with.property('error', 'invalid_scope');
  });
});
