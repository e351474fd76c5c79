import type { DataSource } from 'typeorm';
import type { SessionSweeper } from '../agents/sweeper';
import { createSessionSweeper } from '../agents/sweeper';
import type { ApiKeyService } from '../api-keys/service';
import { createApiKeyService } from '../api-keys/service';
import type { UsageRecorder } from '../api-keys/usage-recorder';
import { createUsageRecorder } from '../api-keys/usage-recorder';
import type { KeyPurger } from '../capabilities/key-purge';
import { createKeyPurger } from '../capabilities/key-purge';
import type { CapabilityService } from '../capabilities/service';
import { createCapabilityService } from '../capabilities/service';
import type { CodeService } from '../code/service';
import { createCodeService } from '../code/service';
import type { CreditService } from '../credits/service';
import { createCreditService } from '../credits/service';
import { embeddingQueue } from '../embeddings/outbox-handler';
import type { EmbeddingService } from '../embeddings/service';
import { createEmbeddingService } from '../embeddings/service';
import type { EdgeService } from '../graph/edge-service';
import { createEdgeService } from '../graph/edge-service';
import type { NodeService } from '../graph/node-service';
import { createNodeService } from '../graph/node-service';
import type { TraversalService } from '../graph/traversal-service';
import { createTraversalService } from '../graph/traversal-service';
import type { ImportanceService } from '../importance/service';
import { createImportanceService } from '../importance/service';
import type { McpService } from '../mcp/service';
import { createMcpService } from '../mcp/service';
import type { McpTokenService } from '../mcp-tokens/service';
import { createMcpTokenService } from '../mcp-tokens/service';
import type { MergeService } from '../merges/service';
import { createMergeService } from '../merges/service';
import type { OntologyConfigService } from '../ontology-config/service';
import { createOntologyConfigService } from '../ontology-config/service';
import type { Authenticator } from '../platform/auth/authenticator';
import { createAuthenticator } from '../platform/auth/authenticator';
import type { JwtService } from '../platform/auth/tokens';
import { createJwtService } from '../platform/auth/tokens';
import type { Config } from '../platform/config';
import { createSealer } from '../platform/crypto/sealer';
import type { PoolRole } from '../platform/db/data-source';
import type { UnitOfWork } from '../platform/db/unit-of-work';
import { createScopedRead, createStatement, createUnitOfWork } from '../platform/db/unit-of-work';
import type { EmbeddingProvider } from '../platform/llm/embedding-provider';
import { createEmbeddingProvider } from '../platform/llm/embedding-provider';
import type { Logger } from '../platform/logger';
import type { OutboxRelay } from '../platform/outbox/relay';
import { createOutboxRelay } from '../platform/outbox/relay';
import type { TemporalHandle } from '../platform/temporal/connection';
import { connectTemporal } from '../platform/temporal/connection';
import type { PromptApi } from '../prompt/dispatcher';
import { createPromptApi } from '../prompt/dispatcher';
import { createPromptModel } from '../prompt/model/factory';
import type { PromptReconciler } from '../prompt/reconciler';
import { createPromptReconciler } from '../prompt/reconciler';
import { createRetrieval } from '../prompt/retrieval';
import type { PromptService } from '../prompt/service';
import { createPromptService } from '../prompt/service';
import { createPromptStream } from '../prompt/stream';
import { createAgentModel } from '../runs/agent-model';
import type { RunReconciler } from '../runs/reconciler';
import { createRunReconciler } from '../runs/reconciler';
import type { RunService } from '../runs/service';
import { createRunService } from '../runs/service';
import type { RunSteps } from '../runs/steps';
import { createRunSteps } from '../runs/steps';
import type { SearchService } from '../search/service';
import { createSearchService } from '../search/service';
import { createFilterPool } from '../triggers/filter-pool';
import type { TriggerIntake } from '../triggers/intake';
import { createTriggerIntake } from '../triggers/intake';
import { createIntakeLimiter } from '../triggers/intake-limiter';
import { countRefusals } from '../triggers/repository';
import type { DeliveryRetention } from '../triggers/retention';
import { createDeliveryRetention } from '../triggers/retention';
import type { TriggerService } from '../triggers/service';
import { createTriggerService } from '../triggers/service';
import type { TypeCatalogService } from '../type-catalog/service';
import { createTypeCatalogService } from '../type-catalog/service';
import { allCapabilities } from './capabilities';
import { createAppDataSource } from './data-source';
import { OUTBOX_EVENTS, OUTBOX_HANDLERS } from './outbox-handlers';

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
    /** The capability registry behind `/v1/cap/*`, runs' steps and the MCP server. */
    capabilities: CapabilityService;
    /** Expires agent sessions that missed their heartbeat (the sweeper schedule). */
    sessionSweeper: SessionSweeper;
    /** Deletes Idempotency-Keys past the replay window (the purge schedule). */
    capabilityKeys: KeyPurger;
    /** Agent runs and their approvals as the API calls them (dispatch, read, cancel, resolve). */
    runs: RunService;
    /** The run workflow's step executor, which its activities call (begin, step, approval, finish). */
    runSteps: RunSteps;
    /** Resumes or settles runs whose workflow closed or never started (the reconcile schedule). */
    runReconciler: RunReconciler;
    /** The MCP server at `/mcp`: the same registry as MCP tools. */
    mcp: McpService;
    /** The code graph: ingest batches (and their workflow's step) and symbol-context. */
    code: CodeService;
    /** Webhook triggers: management (issue 13). */
    triggers: TriggerService;
    /** The signed webhook intake: limits, verification, filter, delivery record, dispatch. */
    triggerIntake: TriggerIntake;
    /** Deletes webhook delivery records past retention (the retention schedule). */
    deliveryRetention: DeliveryRetention;
  };
  /** OpenAI when OPENAI_API_KEY is set, else the local deterministic provider. */
  embeddings: EmbeddingProvider;
  close(): Promise<void>;
}

/** `role` picks the database pool: the API's and the worker's are separate (sizes and timeouts in config). */
export async function createRuntime(config: Config, logger: Logger, role: PoolRole = 'api'): Promise<Runtime> {
  const dataSource = await createAppDataSource(config, role).initialize();
  const temporal = await connectTemporal(config);
  const uow = createUnitOfWork(dataSource);
  const read = createScopedRead(dataSource);
  const jwt = createJwtService(config);
  const usage = createUsageRecorder({ uow, logger, intervalMs: config.USAGE_FLUSH_INTERVAL_MS });
  const sealer = createSealer(config.WEFT_ENCRYPTION_KEY);
  const embeddings = createEmbeddingProvider(config);
  const outbox = createOutboxRelay({ uow, events: OUTBOX_EVENTS, handlers: OUTBOX_HANDLERS(temporal), logger });
  const credits = createCreditService({ uow, logger });
  const prompts = createPromptService({
    uow,
    outbox,
    model: createPromptModel(config),
    sealer,
    retrieval: createRetrieval({ uow, embeddings }),
  });

  const services: Omit<
    Runtime['services'],
    'capabilities' | 'runs' | 'runSteps' | 'triggers' | 'triggerIntake' | 'mcp' | 'runReconciler'
  > = {
    sessionSweeper: createSessionSweeper({ uow, ttlSeconds: config.AGENT_SESSION_TTL_SECONDS, logger }),
    capabilityKeys: createKeyPurger({ uow }),
    deliveryRetention: createDeliveryRetention({ uow }),
    apiKeys: createApiKeyService({ uow, usage }),
    mcpTokens: createMcpTokenService({ uow, jwt, config }),
    ontologyConfig: createOntologyConfigService({ uow }),
    prompts,
    promptApi: createPromptApi({ uow, temporal, sealer, prompts, deadlineMs: config.PROMPT_DEADLINE_MS }),
    promptStream: createPromptStream({ prompts, logger }),
    promptReconciler: createPromptReconciler({ dataSource, uow, temporal, prompts, logger }),
    credits,
    embeddings: createEmbeddingService({ uow, provider: embeddings, logger, enqueue: embeddingQueue(temporal) }),
    search: createSearchService({ uow, embeddings, credits }),
    merges: createMergeService({ uow, temporal }),
    nodes: createNodeService({ uow, read, outbox }),
    edges: createEdgeService({ uow, read }),
    traversals: createTraversalService({ uow }),
    typeCatalog: createTypeCatalogService({ uow }),
    importance: createImportanceService({ uow }),
    code: createCodeService({ uow, temporal, credits, outbox }),
  };
  const capabilities = createCapabilityService({
    uow,
    read,
    logger,
    credits,
    tools: allCapabilities({
      uow,
      outbox,
      sessionTtlSeconds: config.AGENT_SESSION_TTL_SECONDS,
      prompts,
      search: services.search,
    }),
  });

  const filters = createFilterPool();
  const statement = createStatement(dataSource);
  const runs = createRunService({
    uow,
    outbox,
    temporal,
    capabilities,
    logger,
    approvalRecheckSeconds: config.RUN_APPROVAL_RECHECK_SECONDS,
    approvalRechecksPerRun: config.RUN_APPROVAL_RECHECKS_PER_RUN,
  });
  // Webhook triggers: management and the intake share the secrets' sealer and one set of limits.
  const triggerSealer = createSealer(config.WEFT_ENCRYPTION_KEY, 'weft-trigger-secret-v1');
  const triggerLimiter = createIntakeLimiter({
    rates: {
      perSource: config.WEBHOOK_INTAKE_PER_SOURCE,
      perSlug: config.WEBHOOK_INTAKE_PER_SLUG,
      redeliveriesPerTrigger: config.WEBHOOK_REDELIVERIES_PER_TRIGGER,
    },
    countRefusals: (counts) => countRefusals(statement, counts),
    logger,
  });

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
      ...services,
      capabilities,
      runs,
      runSteps: createRunSteps({ uow, capabilities, agentModel: createAgentModel(config) }),
      runReconciler: createRunReconciler({
        dataSource,
        uow,
        temporal,
        logger,
        approvalRecheckSeconds: config.RUN_APPROVAL_RECHECK_SECONDS,
        approvalRechecksPerRun: config.RUN_APPROVAL_RECHECKS_PER_RUN,
      }),
      triggers: createTriggerService({ uow, sealer: triggerSealer, runs, limiter: triggerLimiter, logger }),
      triggerIntake: createTriggerIntake({
        uow,
        read,
        statement,
        sealer: triggerSealer,
        runs,
        filters,
        limiter: triggerLimiter,
        logger,
      }),
      mcp: createMcpService({ capabilities, nodes: services.nodes, logger }),
    },
    embeddings,
    async close() {
      await usage.stop();
      await filters.close();
      await temporal.connection.close();
      await dataSource.destroy();
    },
  };
}
