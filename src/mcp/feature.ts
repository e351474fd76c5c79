import type { CapabilityService } from '../capabilities/service';
import type { NodeService } from '../graph/node-service';
import type { Config } from '../platform/config';
import { checksAnswers } from '../platform/config';
import type { Logger } from '../platform/logger';
import type { RunService } from '../runs/service';
import type { WaitpointService } from '../runs/waitpoints';
import { mcpOrigin, mcpOtherMethods, mcpRoutes } from './routes';
import type { McpService } from './service';
import { createMcpService } from './service';

/** The MCP server: the capability registry as MCP tools, and runs as MCP tasks (tasks.ts). */
export const mcpFeature = {
  name: 'mcp',
  services: {
    /** The MCP server at `/mcp`: the capability registry as MCP tools, and runs as MCP tasks. */
    mcp: (ctx: {
      logger: Logger;
      config: Pick<Config, 'RESPONSE_VALIDATION' | 'NODE_ENV'>;
      services: { capabilities: CapabilityService; nodes: NodeService; runs: RunService; waitpoints: WaitpointService };
    }) =>
      createMcpService({
        capabilities: ctx.services.capabilities,
        nodes: ctx.services.nodes,
        runs: ctx.services.runs,
        waitpoints: ctx.services.waitpoints,
        logger: ctx.logger,
        checkResults: checksAnswers(ctx.config),
      }),
  },
  tags: {
    mcp: 'The MCP server: the capability registry as Model Context Protocol tools over Streamable HTTP.',
  },
  routes: (runtime: { services: { mcp: McpService } }) => mcpRoutes(runtime.services.mcp),
  // `/mcp` refuses a browser page of another origin (403), then answers 405 to anything but POST,
  // before the router sees it.
  middleware: (runtime: { config: Pick<Config, 'PUBLIC_URL' | 'MCP_ALLOWED_ORIGINS'> }) => [
    mcpOrigin(runtime.config),
    mcpOtherMethods(),
  ],
};
