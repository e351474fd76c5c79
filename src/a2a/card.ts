import type { AgentCard } from '@a2a-js/sdk';
import { A2A_PROTOCOL_VERSION } from '@a2a-js/sdk';
import { duplicateInterfacesForLegacy } from '@a2a-js/sdk/compat/v0_3';
import { OAUTH_PATHS } from '../oauth/protocol';
import { MCP_TOKEN_SCOPES } from '../platform/auth/scopes';
import { cardSkills } from './skills';

export const A2A_PATH = '/a2a';
export const AGENT_CARD_PATH = '/.well-known/agent-card.json';

/** The security scheme's name on the card: Weft's bearer credentials (API key, user JWT, MCP token). */
const BEARER = 'bearer';
/** The OAuth scheme's: an access token issued for the `/a2a` resource (RFC 8707), accepted there only. */
const OAUTH = 'oauth';

/**
 * Weft's Agent Card: one JSON-RPC interface at `/a2a`, spoken as A2A 1.0 and, for clients of the SDK's
 * compatibility mode, 0.3. `origin` is PUBLIC_URL's, else the request's own.
 */
export function agentCard(origin: string, version: string): AgentCard {
  const url = new URL(A2A_PATH, origin).toString();
  return {
    name: 'Weft',
    description:
      'A knowledge graph for AI agents whose runs are durable tasks: each message starts a run (the llm agent, ' +
      'or a playbook template) that survives restarts, waits for human approvals (input-required) and keeps a ' +
      'verifiable audit chain.',
    supportedInterfaces: duplicateInterfacesForLegacy(
      [{ url, protocolBinding: 'JSONRPC', tenant: '', protocolVersion: A2A_PROTOCOL_VERSION }],
      ['JSONRPC'],
    ),
    provider: { organization: 'Weft', url: new URL('/', origin).toString() },
    version,
    documentationUrl: new URL('/docs', origin).toString(),
    capabilities: { streaming: true, pushNotifications: true, extensions: [], extendedAgentCard: false },
    securitySchemes: {
      [BEARER]: {
        scheme: {
          $case: 'httpAuthSecurityScheme',
          value: {
            scheme: 'bearer',
            bearerFormat: 'Weft API key (weft_sk_…), user JWT or MCP token',
            description:
              'The same credentials and scopes as the REST API: runs:write to send and cancel, runs:read to read ' +
              'and follow, approvals:write to answer an approval.',
          },
        },
      },
      [OAUTH]: {
        scheme: {
          $case: 'oauth2SecurityScheme',
          value: {
            description:
              `Weft's OAuth 2.1 server: authorization code with PKCE, asking for \`resource=${url}\`; the token ` +
              'works at this endpoint only (a /mcp token is refused here), and never holds approvals:write.',
            flows: {
              flow: {
                $case: 'authorizationCode',
                value: {
                  authorizationUrl: new URL(OAUTH_PATHS.authorize, origin).toString(),
                  tokenUrl: new URL(OAUTH_PATHS.token, origin).toString(),
                  refreshUrl: new URL(OAUTH_PATHS.token, origin).toString(),
                  scopes: Object.fromEntries(MCP_TOKEN_SCOPES.map((scope) => [scope, `Weft's ${scope} scope`])),
                  pkceRequired: true,
                },
              },
            },
            oauth2MetadataUrl: new URL(OAUTH_PATHS.serverMetadata, origin).toString(),
          },
        },
      },
    },
    // Either scheme: a bearer credential, or an OAuth access token for this resource.
    securityRequirements: [{ schemes: { [BEARER]: { list: [] } } }, { schemes: { [OAUTH]: { list: [] } } }],
    defaultInputModes: ['text/plain', 'application/json'],
    defaultOutputModes: ['text/plain', 'application/json'],
    skills: cardSkills(),
    signatures: [],
  };
}
