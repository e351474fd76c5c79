import type { DataSource } from 'typeorm';
import type { JwtService } from '../platform/auth/tokens';
import type { Config } from '../platform/config';
import type { UnitOfWork } from '../platform/db/unit-of-work';
import { oauthMiddleware } from './protocol';
import { oauthRoutes } from './routes';
import type { OAuthService } from './service';
import { createOAuthService } from './service';

interface OAuthRuntime {
  services: { oauth: OAuthService };
  config: Pick<Config, 'PUBLIC_URL'>;
}

/**
 * Weft as an OAuth 2.1 authorization server for its MCP endpoint: MCP clients connect by URL, register
 * themselves and send their person to the console's consent page (docs/clients.md).
 */
export const oauthFeature = {
  name: 'oauth',
  services: {
    /** Clients, grants, codes and refresh tokens; access tokens are MCP-audience JWTs. */
    oauth: (ctx: { uow: UnitOfWork; dataSource: DataSource; jwt: JwtService }) =>
      createOAuthService({ uow: ctx.uow, dataSource: ctx.dataSource, jwt: ctx.jwt }),
  },
  tags: {
    oauth: 'OAuth for the MCP endpoint: the consent page’s calls and the grants a person gave MCP clients.',
  },
  routes: (runtime: OAuthRuntime) => oauthRoutes(runtime.services.oauth, runtime.config),
  // The protocol endpoints (well-known metadata, register, authorize, token, revoke) speak OAuth, not the API.
  middleware: (runtime: OAuthRuntime) => [oauthMiddleware(runtime.services.oauth, runtime.config)],
};
