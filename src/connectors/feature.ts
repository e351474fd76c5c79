import type { AnyCapability } from '../capabilities/define';
import type { CreditService } from '../credits/service';
import type { Config } from '../platform/config';
import { createSealer } from '../platform/crypto/sealer';
import type { ScopedRead, UnitOfWork } from '../platform/db/unit-of-work';
import { addressPolicy, METADATA_ADDRESSES } from '../run-callbacks/address-guard';
import { createOutbound } from './outbound';
import { connectorRoutes } from './routes';
import type { ConnectorService } from './service';
import { createConnectorService } from './service';
import { createConnectorUpkeep } from './upkeep';

/** Connectors (issue 41): remote MCP servers and HTTP APIs whose tools the workspace's agents and runs call. */
export const connectorsFeature = {
  name: 'connectors',
  services: {
    /** The workspace's connectors, and the capability layer's source of their tools. */
    connectors: (ctx: {
      uow: UnitOfWork;
      read: ScopedRead;
      config: Pick<Config, 'WEFT_ENCRYPTION_KEY' | 'CONNECTOR_ALLOWED_CIDRS' | 'PORT'>;
      services: { credits: CreditService };
      tools: () => readonly AnyCapability[];
    }) => {
      // The run callbacks' guard, with its own allowance; the metadata address is never reachable.
      const policy = addressPolicy(false, ctx.config.CONNECTOR_ALLOWED_CIDRS, {
        never: METADATA_ADDRESSES,
        variable: 'CONNECTOR_ALLOWED_CIDRS',
      });
      let names: readonly string[] | undefined;
      return createConnectorService({
        uow: ctx.uow,
        read: ctx.read,
        sealer: createSealer(ctx.config.WEFT_ENCRYPTION_KEY, 'weft-connector-secret-v1'),
        outbound: createOutbound(policy, ctx.config.PORT),
        credits: ctx.services.credits,
        registryNames: () => {
          names ??= ctx.tools().map((tool) => tool.name);
          return names;
        },
      });
    },
    /** The call ledger's expired rows and unpinned old versions (run by the capability-key-purge schedule). */
    connectorUpkeep: (ctx: { uow: UnitOfWork }) => createConnectorUpkeep({ uow: ctx.uow }),
  },
  tags: {
    connectors: 'Remote MCP servers and OpenAPI-described HTTP APIs whose tools become the workspace’s own.',
  },
  routes: (runtime: { services: { connectors: ConnectorService } }) => connectorRoutes(runtime.services.connectors),
};
