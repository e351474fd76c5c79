import type { ApiTag } from '../platform/openapi/tags';
import { mcpTokenRoutes } from './routes';
import type { McpTokenService } from './service';

/** MCP-audience tokens (their rows are api-keys' credentials). */
export const mcpTokensFeature = {
  name: 'mcp-tokens',
  tags: ['mcp-tokens'] satisfies ApiTag[],
  routes: (runtime: { services: { mcpTokens: McpTokenService } }) => mcpTokenRoutes(runtime.services.mcpTokens),
};
