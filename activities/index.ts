import type { SessionSweeper } from '../src/agents/sweeper';
import type { KeyPurger } from '../src/capabilities/key-purge';
import type { CodeBatchPurger } from '../src/code/batch-purge';
import type { CodeService } from '../src/code/service';
import type { CommunityService } from '../src/communities/service';
import type { ConnectorUpkeep } from '../src/connectors/upkeep';
import type { CreditService } from '../src/credits/service';
import type { EmbeddingService } from '../src/embeddings/service';
import type { VersionService } from '../src/graph/versions-service';
import type { MergeService } from '../src/merges/service';
import type { UnitOfWork } from '../src/platform/db/unit-of-work';
import type { OutboxRelay } from '../src/platform/outbox/relay';
import type { PromptReconciler } from '../src/prompt/reconciler';
import type { PromptService } from '../src/prompt/service';
import type { CallbackRetention } from '../src/run-callbacks/retention';
import type { RunCallbackService } from '../src/run-callbacks/service';
import type { RunScheduleFires } from '../src/run-schedules/fires';
import type { FlowReleaser } from '../src/runs/flow';
import type { RunReconciler } from '../src/runs/reconciler';
import type { RunSteps } from '../src/runs/steps';
import type { DeliveryRetention } from '../src/triggers/retention';
import { createAgentActivities } from './agents';
import { createCodeActivities } from './code';
import { createCommunityActivities } from './communities';
import { createEmbeddingActivities } from './embeddings';
import { classifiedActivities } from './failures';
import type { GraphActivityDeps } from './graph';
import { createGraphActivities } from './graph';
import { createGraphVersionActivities } from './graph-versions';
import { createMaintenanceActivities } from './maintenance';
import { createMergeActivities } from './merges';
import { createPromptActivities } from './prompt';
import { createRunCallbackActivities } from './run-callbacks';
import { createRunScheduleActivities } from './run-schedules';
import { createRunActivities } from './runs';
import { createTriggerActivities } from './triggers';

/** Everything activities need: the same domain services the API uses. */
export interface ActivityDeps {
  outbox: OutboxRelay;
  dataSource: GraphActivityDeps['dataSource'];
  uow: UnitOfWork;
  services: {
    prompts: PromptService;
    promptReconciler: PromptReconciler;
    credits: CreditService;
    merges: MergeService;
    embeddings: EmbeddingService;
    typeCatalog: GraphActivityDeps['typeCatalog'];
    importance: GraphActivityDeps['importance'];
    sessionSweeper: SessionSweeper;
    capabilityKeys: KeyPurger;
    codeBatches: CodeBatchPurger;
    connectorUpkeep: ConnectorUpkeep;
    runSteps: RunSteps;
    runReconciler: RunReconciler;
    runFlow: FlowReleaser;
    code: CodeService;
    deliveryRetention: DeliveryRetention;
    runCallbacks: RunCallbackService;
    callbackRetention: CallbackRetention;
    runScheduleFires: RunScheduleFires;
    communities: CommunityService;
    versions: VersionService;
  };
}

/**
 * The composition root of the worker's activities. Each group is a thin adapter over a service;
 * failures are classified here, once for all of them (activities/failures.ts).
 */
export function createActivities(deps: ActivityDeps) {
  return classifiedActivities(
    {
      ...createMaintenanceActivities(deps),
      ...createPromptActivities({ prompts: deps.services.prompts }),
      ...createMergeActivities(deps),
      ...createAgentActivities(deps),
      ...createRunActivities(deps),
      ...createRunScheduleActivities(deps),
      ...createCodeActivities(deps),
      ...createCommunityActivities({ dataSource: deps.dataSource, communities: deps.services.communities }),
      ...createTriggerActivities(deps),
      ...createRunCallbackActivities(deps),
      ...createGraphVersionActivities(deps),
      ...createEmbeddingActivities({ embeddings: deps.services.embeddings }),
      ...createGraphActivities({
        dataSource: deps.dataSource,
        typeCatalog: deps.services.typeCatalog,
        importance: deps.services.importance,
      }),
    },
    // Their own rules: runStep retries a step's transient refusal as a plain error;
    // embedAndStoreNodes gives the provider a few attempts.
    ['runStep', 'embedAndStoreNodes'],
  );
}

export type Activities = ReturnType<typeof createActivities>;
