import { mcpOtherMethods, mcpRoutes } from './routes';
import type { McpService } from './service';

/** The MCP server: the capability registry as MCP tools. */
export const mcpFeature = {
  name: 'mcp',
  tags: {
    mcp: 'The MCP server: the capability registry as Model Context Protocol tools over Streamable HTTP.',
  },
  routes: (runtime: { services: { mcp: McpService } }) => mcpRoutes(runtime.services.mcp),
  // `/mcp` answers 405 to anything but POST before the router sees it.
  middleware: () => [mcpOtherMethods()],
};
