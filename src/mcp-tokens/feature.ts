import { mcpTokenRoutes } from './routes';
import type { McpTokenService } from './service';

/** MCP-audience tokens (their rows are api-keys' credentials). */
export const mcpTokensFeature = {
  name: 'mcp-tokens',
  tags: {
    'mcp-tokens': 'MCP-audience credentials for agent tooling: short-lived JWTs and named tokens.',
  },
  routes: (runtime: { services: { mcpTokens: McpTokenService } }) => mcpTokenRoutes(runtime.services.mcpTokens),
};
