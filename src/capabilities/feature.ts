import type { CodeService } from '../code/service';
import type { CreditService } from '../credits/service';
import type { NodeService } from '../graph/node-service';
import type { TraversalService } from '../graph/traversal-service';
import type { VersionService } from '../graph/versions-service';
import type { Config } from '../platform/config';
import { checksAnswers } from '../platform/config';
import type { ScopedRead, UnitOfWork } from '../platform/db/unit-of-work';
import type { Logger } from '../platform/logger';
import type { OutboxRelay } from '../platform/outbox/relay';
import type { MaintenanceSchedule } from '../platform/temporal/schedules';
import type { PromptApi } from '../prompt/dispatcher';
import type { PromptService } from '../prompt/service';
import type { SearchService } from '../search/service';
import type { AnyCapability, WorkspaceToolSource } from './define';
import { CapabilityIdempotencyKey } from './entities';
import { createKeyPurger } from './key-purge';
import { capabilityRoutes } from './routes';
import type { CapabilityService } from './service';
import { createCapabilityService } from './service';
import { billingCapabilities } from './tools/billing';
import { graphReadCapabilities } from './tools/graph-reads';
import { graphWriteCapabilities } from './tools/graph-writes';
import { ontologyCapabilities } from './tools/ontology';
import { capabilityKeyPurgeWorkflow } from './workflow';

/**
 * The capability registry's edge (`/v1/cap`) and its general tools. Other features declare their
 * own tools in their manifests; src/app/capabilities.ts puts these general ones last.
 */
export const capabilitiesFeature = {
  name: 'capabilities',
  services: {
    /** The capability registry behind `/v1/cap/*`, runs' steps and the MCP server: every feature's tools. */
    capabilities: (ctx: {
      uow: UnitOfWork;
      read: ScopedRead;
      logger: Logger;
      services: { credits: CreditService; connectors: WorkspaceToolSource };
      tools: () => readonly AnyCapability[];
      config: Pick<Config, 'RESPONSE_VALIDATION' | 'NODE_ENV'>;
    }) =>
      createCapabilityService({
        uow: ctx.uow,
        read: ctx.read,
        logger: ctx.logger,
        credits: ctx.services.credits,
        tools: ctx.tools(),
        workspaceTools: ctx.services.connectors,
        validateOutputs: checksAnswers(ctx.config),
      }),
    /** Deletes Idempotency-Keys past the replay window (the purge schedule). */
    capabilityKeys: (ctx: { uow: UnitOfWork }) => createKeyPurger({ uow: ctx.uow }),
  },
  tags: {
    capabilities: 'Agent tools mounted as POST /v1/cap/<tool-name>, with idempotency and a credit envelope.',
    'capabilities:read': 'Capabilities that only read.',
    'capabilities:write': 'Capabilities that change state; replayable with an Idempotency-Key.',
  },
  entities: [CapabilityIdempotencyKey],
  routes: (runtime: { services: { capabilities: CapabilityService } }) =>
    capabilityRoutes(runtime.services.capabilities),
  capabilities: (deps: {
    uow: UnitOfWork;
    read: ScopedRead;
    outbox: Pick<OutboxRelay, 'kick'>;
    prompts: PromptService;
    promptApi: PromptApi;
    search: SearchService;
    nodes: NodeService;
    traversals: TraversalService;
    versions: VersionService;
    code: CodeService;
  }) => [
    ...ontologyCapabilities(deps),
    ...graphWriteCapabilities(deps),
    ...graphReadCapabilities(deps),
    ...billingCapabilities(deps),
  ],
  schedules: [
    {
      name: 'capability-key-purge',
      description:
        'Hourly: deletes capability Idempotency-Keys older than the 24-hour replay window, and stored ' +
        'code-index batches older than 24 hours.',
      workflow: capabilityKeyPurgeWorkflow,
      args: [{}],
      spec: { intervals: [{ every: '1 hour' }] },
    },
  ] satisfies MaintenanceSchedule[],
};
