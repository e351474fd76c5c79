import type { Context } from 'koa';
import { z } from 'zod';
import { defineRoute } from '../platform/api/route';
import type { Principal } from '../platform/auth/principal';
import { MCP_TOKEN_SCOPES } from '../platform/auth/scopes';
import type { Config } from '../platform/config';
import { BadRequestError, ForbiddenError, NotFoundError } from '../platform/errors';
import { LIMITS } from '../rules/limits';
import { OAuthError } from './clients';
import { originOf, resourcesAt } from './protocol';
import {
  ClientParams,
  OAuthClientInfo,
  OAuthConsentRequest,
  OAuthConsentResponse,
  OAuthGrantRow,
  OAuthWorkspace,
  WorkspaceGrantParams,
  WorkspaceParams,
} from './schemas';
import type { OAuthService } from './service';
import { redirectWith } from './service';

const tags = ['oauth'] as const;
const notMember = 'Workspace missing or the caller is not a member';

/** Consent is a person's: a user JWT, never a key or an MCP token acting for one. */
function assertPerson(auth: Principal) {
  if (auth.credential.kind !== 'user_jwt') throw new ForbiddenError('Consent takes a user credential (a user JWT)');
}

export const oauthRoutes = (oauth: OAuthService, config: Pick<Config, 'PUBLIC_URL'>) => {
  const resourcesOf = (ctx: Context) => resourcesAt(originOf(ctx, config));
  return [
    defineRoute({
      method: 'get',
      path: '/v1/oauth/clients/{client_id}',
      operationId: 'getOAuthClient',
      summary: 'A registered OAuth client, as the consent page shows it',
      description: 'The name and redirect URIs a client registered (RFC 7591), and the scopes consent may grant it.',
      tags,
      scope: 'mcp_tokens:manage',
      params: ClientParams,
      response: OAuthClientInfo,
      errors: { 404: 'No such client (or it expired unused)' },
      handler: async ({ params }) => {
        const client = await oauth.findClient(params.client_id);
        if (!client) throw new NotFoundError('OAuth client not found');
        return {
          client_id: client.id,
          client_name: client.client_name,
          redirect_uris: client.redirect_uris,
          scopes: MCP_TOKEN_SCOPES,
        };
      },
    }),
    defineRoute({
      method: 'get',
      path: '/v1/oauth/workspaces',
      operationId: 'listOAuthWorkspaces',
      summary: 'The workspaces the signed-in person may grant a client (the consent page’s picker)',
      description: 'Every workspace the user JWT’s user belongs to, the default first. A user JWT only.',
      tags,
      scope: 'mcp_tokens:manage',
      credentials: ['user_jwt'],
      response: z.array(OAuthWorkspace),
      errors: { 403: 'Not a user JWT' },
      handler: ({ auth }) => {
        assertPerson(auth);
        return oauth.workspacesOf(auth);
      },
    }),
    defineRoute({
      method: 'post',
      path: '/v1/oauth/consent',
      operationId: 'consentOAuth',
      summary: 'Approve or deny an OAuth client’s authorization request (the console’s consent page)',
      description:
        'The person, signed in with a user JWT, answers an authorization request of `/oauth/authorize` for one ' +
        'workspace. Approving makes a grant (scopes an MCP token may hold, never approvals or `*:manage`) and a ' +
        `one-time code valid ${LIMITS.oauth.codeSeconds} s; the answer is where to send the browser. A request ` +
        'whose client or redirect URI is unknown is a 400 with `{detail}`; any other refusal goes to the client.',
      tags,
      scope: 'mcp_tokens:manage',
      credentials: ['user_jwt'],
      body: OAuthConsentRequest,
      example: {
        client_id: 'weft_client_0b6f2d4e-8c1a-4f3b-9d2e-5a7c6b8e9f01',
        redirect_uri: 'http://127.0.0.1:33418/callback',
        response_type: 'code',
        code_challenge: 'E9Melhoa2OwvFrEMTJguCHaoeK1t8URWbuGJSstw-cM',
        code_challenge_method: 'S256',
        scope: 'ontology:read',
        state: 'af0ifjsldkj',
        workspace_id: '0b6f2d4e-8c1a-4f3b-9d2e-5a7c6b8e9f01',
        decision: 'approve',
      },
      response: OAuthConsentResponse,
      errors: { 400: 'Unknown client, or a redirect URI it did not register', 403: 'Not a user JWT', 404: notMember },
      handler: async ({ auth, body, ctx }) => {
        assertPerson(auth);
        const iss = originOf(ctx, config);
        const { workspace_id, decision, ...request } = body;
        try {
          if (decision === 'deny') {
            await oauth.checkRequest(request, resourcesOf(ctx));
            const redirect_to = redirectWith(request.redirect_uri, {
              error: 'access_denied',
              state: request.state,
              iss,
            });
            return { redirect_to, grant_id: null };
          }
          const { code, grantId } = await oauth.approve(auth, workspace_id, request, resourcesOf(ctx));
          return {
            redirect_to: redirectWith(request.redirect_uri, { code, state: request.state, iss }),
            grant_id: grantId,
          };
        } catch (error) {
          if (!(error instanceof OAuthError)) throw error;
          if ((error as { redirectable?: boolean }).redirectable === false) {
            throw new BadRequestError(error.description);
          }
          const query = { error: error.error, error_description: error.description, state: request.state, iss };
          return { redirect_to: redirectWith(request.redirect_uri, query), grant_id: null };
        }
      },
    }),
    defineRoute({
      method: 'get',
      path: '/v1/workspaces/{workspace_id}/oauth-grants',
      operationId: 'listOAuthGrants',
      summary: 'The caller’s OAuth grants in a workspace (beside its MCP tokens), newest first',
      description:
        'Each client the caller approved on the consent page for this workspace, revoked ones included. Its ' +
        'access tokens are listed with the MCP tokens (named `OAuth: <client>`).',
      tags,
      scope: 'mcp_tokens:manage',
      params: WorkspaceParams,
      response: z.array(OAuthGrantRow),
      errors: { 404: notMember },
      handler: ({ auth, params }) => oauth.listGrants(auth, params.workspace_id),
    }),
    defineRoute({
      method: 'delete',
      path: '/v1/workspaces/{workspace_id}/oauth-grants/{grant_id}',
      operationId: 'revokeOAuthGrant',
      summary: 'Revoke an OAuth grant, its access tokens and refresh tokens (idempotent)',
      description: 'The client’s next MCP call is refused (401), and its refresh token no longer refreshes.',
      tags,
      scope: 'mcp_tokens:manage',
      params: WorkspaceGrantParams,
      status: 204,
      errors: { 404: 'Not found, or not the caller’s grant in that workspace' },
      handler: ({ auth, params }) => oauth.revokeGrant(auth, params.workspace_id, params.grant_id),
    }),
  ];
};
