import type { DataSource } from 'typeorm';
import type { Config } from './config';
import type { Logger } from './logger';
import type { Authenticator } from './api/route';
import { createApiKeyService, type ApiKeyService } from './api-keys/service';
import { createUsageRecorder, type UsageRecorder } from './api-keys/usage-recorder';
import { createAuthenticator } from './auth/authenticator';
import { createJwtService, type JwtService } from './auth/tokens';
import { createAppDataSource } from './db/data-source';
import { createUnitOfWork, type UnitOfWork } from './db/unit-of-work';
import { createMcpTokenService, type McpTokenService } from './mcp-tokens/service';
import { createOntologyConfigService, type OntologyConfigService } from './ontology-config/service';
import { OUTBOX_HANDLERS } from './outbox/handlers';
import { createOutboxRelay, type OutboxRelay } from './outbox/relay';
import { connectTemporal, type TemporalHandle } from './temporal/connection';

/** The one composition root: the API and the worker's activities are built from the same services. */
export interface Runtime {
  config: Config;
  logger: Logger;
  dataSource: DataSource;
  uow: UnitOfWork;
  jwt: JwtService;
  usage: UsageRecorder;
  authenticator: Authenticator;
  temporal: TemporalHandle;
  outbox: OutboxRelay;
  services: {
    apiKeys: ApiKeyService;
    mcpTokens: McpTokenService;
    ontologyConfig: OntologyConfigService;
  };
  close(): Promise<void>;
}

export async function createRuntime(config: Config, logger: Logger): Promise<Runtime> {
  const dataSource = await createAppDataSource(config).initialize();
  const temporal = await connectTemporal(config);
  const uow = createUnitOfWork(dataSource);
  const jwt = createJwtService(config);
  const usage = createUsageRecorder({ uow, logger, intervalMs: config.USAGE_FLUSH_INTERVAL_MS });
  const outbox = createOutboxRelay({ dataSource, uow, handlers: OUTBOX_HANDLERS(temporal), logger });

  return {
    config,
    logger,
    dataSource,
    uow,
    jwt,
    usage,
    authenticator: createAuthenticator({ uow, jwt, usage }),
    temporal,
    outbox,
    services: {
      apiKeys: createApiKeyService({ uow, usage }),
      mcpTokens: createMcpTokenService({ uow, jwt, config }),
      ontologyConfig: createOntologyConfigService({ uow }),
    },
    async close() {
      await usage.stop();
      await temporal.connection.close();
      await dataSource.destroy();
    },
  };
}
