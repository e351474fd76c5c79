import type { JwtService } from '../platform/auth/tokens';
import type { Config } from '../platform/config';
import type { UnitOfWork } from '../platform/db/unit-of-work';
import { mcpTokenRoutes } from './routes';
import type { McpTokenService } from './service';
import { createMcpTokenService } from './service';

/** MCP-audience tokens (their rows are api-keys' credentials). */
export const mcpTokensFeature = {
  name: 'mcp-tokens',
  services: {
    mcpTokens: (ctx: { uow: UnitOfWork; jwt: JwtService; config: Pick<Config, 'MCP_TOKEN_DEFAULT_TTL_DAYS'> }) =>
      createMcpTokenService(ctx),
  },
  tags: {
    'mcp-tokens': 'MCP-audience credentials for agent tooling: short-lived JWTs and named tokens.',
  },
  routes: (runtime: { services: { mcpTokens: McpTokenService } }) => mcpTokenRoutes(runtime.services.mcpTokens),
};
