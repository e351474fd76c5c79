import type { ApiTag } from '../platform/openapi/tags';
import { mcpRoutes } from './routes';
import type { McpService } from './service';

/** The MCP server: the capability registry as MCP tools. */
export const mcpFeature = {
  name: 'mcp',
  tags: ['mcp'] satisfies ApiTag[],
  routes: (runtime: { services: { mcp: McpService } }) => mcpRoutes(runtime.services.mcp),
};
