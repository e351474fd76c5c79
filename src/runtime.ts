import type { DataSource } from 'typeorm';
import type { Config } from './platform/config';
import type { Logger } from './platform/logger';
import type { Authenticator } from './platform/api/route';
import { createApiKeyService, type ApiKeyService } from './api-keys/service';
import { createUsageRecorder, type UsageRecorder } from './api-keys/usage-recorder';
import { createAuthenticator } from './platform/auth/authenticator';
import { createJwtService, type JwtService } from './platform/auth/tokens';
import { createAppDataSource } from './platform/db/data-source';
import { createScopedRead, createUnitOfWork, type UnitOfWork } from './platform/db/unit-of-work';
import { createMcpTokenService, type McpTokenService } from './mcp-tokens/service';
import { createEdgeService, type EdgeService } from './graph/edge-service';
import { createNodeService, type NodeService } from './graph/node-service';
import { createTraversalService, type TraversalService } from './graph/traversal-service';
import { createImportanceService, type ImportanceService } from './importance/service';
import { createTypeCatalogService, type TypeCatalogService } from './type-catalog/service';
import { createMergeService, type MergeService } from './merges/service';
import { createCreditService, type CreditService } from './credits/service';
import { createEmbeddingProvider, type EmbeddingProvider } from './platform/llm/embedding-provider';
import { createEmbeddingService, type EmbeddingService } from './embeddings/service';
import { createSearchService, type SearchService } from './search/service';
import { createOntologyConfigService, type OntologyConfigService } from './ontology-config/service';
import { OUTBOX_HANDLERS } from './outbox-handlers';
import { createPromptApi, type PromptApi } from './prompt/dispatcher';
import { createPromptModel } from './prompt/model/factory';
import { createRetrieval } from './prompt/retrieval';
import { createSealer } from './prompt/sealed';
import { createPromptStream } from './prompt/stream';
import { createPromptService, type PromptService } from './prompt/service';
import { createPromptReconciler, type PromptReconciler } from './prompt/reconciler';
import { createOutboxRelay, type OutboxRelay } from './platform/outbox/relay';
import { connectTemporal, type TemporalHandle } from './platform/temporal/connection';

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
    prompts: PromptService;
    promptApi: PromptApi;
    promptStream: ReturnType<typeof createPromptStream>;
    promptReconciler: PromptReconciler;
    credits: CreditService;
    /** Node embedding steps for the embedding workflow (the provider itself is `embeddings` below). */
    embeddings: EmbeddingService;
    search: SearchService;
    merges: MergeService;
    nodes: NodeService;
    edges: EdgeService;
    traversals: TraversalService;
    typeCatalog: TypeCatalogService;
    importance: ImportanceService;
  };
  /** OpenAI when OPENAI_API_KEY is set, else the local deterministic provider. */
  embeddings: EmbeddingProvider;
  close(): Promise<void>;
}

export async function createRuntime(config: Config, logger: Logger): Promise<Runtime> {
  const dataSource = await createAppDataSource(config).initialize();
  const temporal = await connectTemporal(config);
  const uow = createUnitOfWork(dataSource);
  const read = createScopedRead(dataSource);
  const jwt = createJwtService(config);
  const usage = createUsageRecorder({ uow, logger, intervalMs: config.USAGE_FLUSH_INTERVAL_MS });
  const sealer = createSealer(config.JWT_SECRET);
  const embeddings = createEmbeddingProvider(config);
  const outbox = createOutboxRelay({ dataSource, uow, handlers: OUTBOX_HANDLERS(temporal), logger });
  const prompts = createPromptService({ uow, outbox, model: createPromptModel(config), sealer, retrieval: createRetrieval({ uow, embeddings }) });

  return {
    config,
    logger,
    dataSource,
    uow,
    jwt,
    usage,
    authenticator: createAuthenticator({ dataSource, jwt, usage }),
    temporal,
    outbox,
    services: {
      apiKeys: createApiKeyService({ uow, usage }),
      mcpTokens: createMcpTokenService({ uow, jwt, config }),
      ontologyConfig: createOntologyConfigService({ uow }),
      prompts,
      promptApi: createPromptApi({ uow, temporal, sealer, prompts }),
      promptStream: createPromptStream({ uow, prompts, logger }),
      promptReconciler: createPromptReconciler({ dataSource, uow, temporal, prompts, logger }),
      credits: createCreditService({ uow, logger }),
      embeddings: createEmbeddingService({ uow, provider: embeddings, logger }),
      search: createSearchService({ uow, embeddings, logger }),
      merges: createMergeService({ uow, temporal }),
      nodes: createNodeService({ uow, read, outbox }),
      edges: createEdgeService({ uow, read }),
      traversals: createTraversalService({ uow }),
      typeCatalog: createTypeCatalogService({ uow }),
      importance: createImportanceService({ uow }),
    },
    embeddings,
    async close() {
      await usage.stop();
      await temporal.connection.close();
      await dataSource.destroy();
    },
  };
}
