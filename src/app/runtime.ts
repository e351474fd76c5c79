import type { DataSource } from 'typeorm';
import type { UsageRecorder } from '../api-keys/usage-recorder';
import { createUsageRecorder } from '../api-keys/usage-recorder';
import { installEdgeGuards } from '../graph/edge-guards';
import type { RateLimiter } from '../platform/api/rate-limit';
import { createRateLimiter } from '../platform/api/rate-limit';
import type { EventStreams } from '../platform/api/sse';
import { createEventStreams } from '../platform/api/sse';
import type { Authenticator } from '../platform/auth/authenticator';
import { createAuthenticator } from '../platform/auth/authenticator';
import type { JwtService } from '../platform/auth/tokens';
import { createJwtService } from '../platform/auth/tokens';
import type { Config } from '../platform/config';
import type { Sealer } from '../platform/crypto/sealer';
import { createSealer } from '../platform/crypto/sealer';
import type { PoolRole } from '../platform/db/data-source';
import type { Standby } from '../platform/db/standby';
import { createStandby } from '../platform/db/standby';
import type { ScopedRead, Statement, UnitOfWork } from '../platform/db/unit-of-work';
import { createScopedRead, createStatement, createUnitOfWork } from '../platform/db/unit-of-work';
import type { EmbeddingProvider } from '../platform/llm/embedding/contract';
import { createEmbeddingProvider } from '../platform/llm/embedding/factory';
import type { Logger } from '../platform/logger';
import { observePool } from '../platform/metrics/pool';
import type { OutboxRelay } from '../platform/outbox/relay';
import { createOutboxRelay } from '../platform/outbox/relay';
import type { TemporalHandle } from '../platform/temporal/connection';
import { connectTemporal, temporalAnswers } from '../platform/temporal/connection';
import { LIMITS } from '../rules/limits';
import { allCapabilities } from './capabilities';
import { createAppDataSource } from './data-source';
import type { FeatureServices } from './features';
import { FEATURES } from './features';
import { OUTBOX_EVENTS, OUTBOX_HANDLERS } from './outbox-handlers';
import { createServiceRegistry } from './services';

/**
 * What every feature may build on, built once here: configuration, connections, the unit of work
 * and its read-only siblings, tokens, usage, authentication, Temporal, the outbox relay, the prompt
 * sealer and the embedding provider. Everything that belongs to one feature is in its manifest.
 */
export interface Kernel {
  config: Config;
  logger: Logger;
  dataSource: DataSource;
  uow: UnitOfWork;
  /** One read under a workspace's RLS in one round trip, without the unit of work's transaction. */
  read: ScopedRead;
  /** One statement with no scope set: only for statements that are their own scope (definer functions). */
  statement: Statement;
  /** The standby the read routes read from (DATABASE_REPLICA_URL; the API's only), when configured. */
  standby?: Standby;
  jwt: JwtService;
  usage: UsageRecorder;
  authenticator: Authenticator;
  temporal: TemporalHandle;
  outbox: OutboxRelay;
  /** Seals prompts' text at rest (purpose `weft-prompt-seal-v1`). */
  sealer: Sealer;
  /** OpenAI when OPENAI_API_KEY is set, else the local deterministic provider. */
  embeddings: EmbeddingProvider;
  /** Server-sent event streams that follow their credential and end at their lifetime (platform/api/sse.ts). */
  streams: EventStreams;
  /**
   * Requests per credential (RATE_LIMIT_RPS, RATE_LIMIT_BURST), counted in this runtime: the API's for
   * every request, the worker's for a run schedule's fire as the credential it acts as (issue 43 item 3).
   * Undefined: no limit.
   */
  rateLimiter?: RateLimiter;
}

/**
 * The one composition root: the API and the worker's activities are built from the same services.
 * `services` is every service the features' manifests declare (src/app/features.ts), typed from them.
 */
export interface Runtime extends Kernel {
  services: FeatureServices;
  close(): Promise<void>;
}

/** `role` picks the database pool: the API's and the worker's are separate (sizes and timeouts in config). */
export async function createRuntime(config: Config, logger: Logger, role: PoolRole = 'api'): Promise<Runtime> {
  // Before anything can write an edge: the graph runs the features' guards on every one.
  installEdgeGuards(FEATURES.flatMap((feature) => feature.edgeGuards ?? []));
  const dataSource = await createAppDataSource(config, role).initialize();
  const unobservePool = observePool(dataSource, role);
  const temporal = await connectTemporal(config);
  const standby = role === 'api' ? await connectStandby(config, logger) : undefined;
  const uow = createUnitOfWork(dataSource, standby);
  const jwt = createJwtService(config);
  const usage = createUsageRecorder({ uow, logger, intervalMs: config.USAGE_FLUSH_INTERVAL_MS });
  const outbox = createOutboxRelay({
    uow,
    events: OUTBOX_EVENTS,
    handlers: OUTBOX_HANDLERS(temporal, uow),
    logger,
    // Rows held up by a Temporal outage leave as soon as it answers again (issue 44 item 6).
    temporalAnswers: () => temporalAnswers(temporal, LIMITS.outbox.temporalProbeMs),
  });
  const read = createScopedRead(dataSource, standby);
  const kernel: Kernel = {
    config,
    logger,
    dataSource,
    uow,
    read,
    statement: createStatement(dataSource),
    standby,
    jwt,
    usage,
    authenticator: createAuthenticator({ dataSource, jwt, usage }),
    temporal,
    outbox,
    sealer: createSealer(config.WEFT_ENCRYPTION_KEY),
    embeddings: createEmbeddingProvider(config),
    streams: createEventStreams({
      read,
      logger,
      recheckMs: config.STREAM_CREDENTIAL_RECHECK_MS,
      maxLifetimeMs: config.STREAM_MAX_LIFETIME_MS,
      maxOpen: { credential: config.STREAM_MAX_PER_CREDENTIAL, workspace: config.STREAM_MAX_PER_WORKSPACE },
      maxBufferedBytes: config.STREAM_MAX_BUFFERED_BYTES,
    }),
    rateLimiter: createRateLimiter(config),
  };

  const registry = createServiceRegistry(FEATURES, {
    ...kernel,
    tools: () =>
      allCapabilities({
        uow,
        read: kernel.read,
        outbox,
        sessionTtlSeconds: config.AGENT_SESSION_TTL_SECONDS,
        prompts: services.prompts,
        promptApi: services.promptApi,
        search: services.search,
        nodes: services.nodes,
        traversals: services.traversals,
        versions: services.versions,
        code: services.code,
        runs: () => services.runs,
        approvals: () => services.approvals,
        waitpoints: () => services.waitpoints,
      }),
  });
  const services = registry.services as FeatureServices;
  // Built now rather than on a first request: a misconfigured service fails the boot.
  registry.buildAll();

  return {
    ...kernel,
    services,
    async close() {
      await usage.stop();
      await registry.close();
      await temporal.connection.close();
      unobservePool();
      await standby?.dataSource.destroy();
      await dataSource.destroy();
    },
  };
}

/**
 * The standby's pool, when DATABASE_REPLICA_URL is set. One that cannot be reached at boot is left out
 * (logged): the primary serves every read, as without a standby, until the next start.
 */
async function connectStandby(config: Config, logger: Logger): Promise<Standby | undefined> {
  if (!config.DATABASE_REPLICA_URL) return undefined;
  try {
    const source = await createAppDataSource(
      { ...config, DATABASE_URL: config.DATABASE_REPLICA_URL },
      'api',
    ).initialize();
    return createStandby(source, (error) => logger.warn({ err: error }, 'standby read failed; read from the primary'));
  } catch (error) {
    logger.error(
      { err: error },
      'the standby (DATABASE_REPLICA_URL) cannot be reached: every read goes to the primary',
    );
    return undefined;
  }
}
