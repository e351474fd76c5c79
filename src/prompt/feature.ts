import type { DataSource } from 'typeorm';
import type { EventStreams } from '../platform/api/sse';
import type { Config } from '../platform/config';
import type { Sealer } from '../platform/crypto/sealer';
import type { UnitOfWork } from '../platform/db/unit-of-work';
import type { EmbeddingProvider } from '../platform/llm/embedding/contract';
import type { Logger } from '../platform/logger';
import type { OutboxRelay } from '../platform/outbox/relay';
import type { TemporalHandle } from '../platform/temporal/connection';
import type { MaintenanceSchedule } from '../platform/temporal/schedules';
import type { PromptApi } from './dispatcher';
import { createPromptApi } from './dispatcher';
import { PromptRun, PromptWrite } from './entities';
import { createPromptModel } from './model/factory';
import { createPromptReconciler } from './reconciler';
import { createRetrieval } from './retrieval';
import { promptRoutes } from './routes';
import type { PromptService } from './service';
import { createPromptService } from './service';
import { createPromptStream } from './stream';
import { promptReconcileWorkflow } from './workflow';

/** Free-text prompts, their audit rows and the reconcile safety net. */
export const promptFeature = {
  name: 'prompt',
  services: {
    prompts: (ctx: {
      uow: UnitOfWork;
      outbox: OutboxRelay;
      config: Config;
      sealer: Sealer;
      embeddings: EmbeddingProvider;
    }) =>
      createPromptService({
        uow: ctx.uow,
        outbox: ctx.outbox,
        model: createPromptModel(ctx.config),
        sealer: ctx.sealer,
        retrieval: createRetrieval({ uow: ctx.uow, embeddings: ctx.embeddings }),
      }),
    promptApi: (ctx: {
      uow: UnitOfWork;
      temporal: TemporalHandle;
      sealer: Sealer;
      config: Pick<Config, 'PROMPT_DEADLINE_MS'>;
      services: { prompts: PromptService };
    }) =>
      createPromptApi({
        uow: ctx.uow,
        temporal: ctx.temporal,
        sealer: ctx.sealer,
        prompts: ctx.services.prompts,
        deadlineMs: ctx.config.PROMPT_DEADLINE_MS,
      }),
    promptStream: (ctx: { logger: Logger; streams: EventStreams; services: { prompts: PromptService } }) =>
      createPromptStream({ prompts: ctx.services.prompts, logger: ctx.logger, streams: ctx.streams }),
    promptReconciler: (ctx: {
      dataSource: DataSource;
      uow: UnitOfWork;
      temporal: TemporalHandle;
      logger: Logger;
      services: { prompts: PromptService };
    }) =>
      createPromptReconciler({
        dataSource: ctx.dataSource,
        uow: ctx.uow,
        temporal: ctx.temporal,
        prompts: ctx.services.prompts,
        logger: ctx.logger,
      }),
  },
  tags: {
    prompt: 'Free-text prompts that extract graph facts, answer from the graph, or both (metered).',
  },
  entities: [PromptRun, PromptWrite],
  routes: (runtime: { services: { promptApi: PromptApi; promptStream: ReturnType<typeof createPromptStream> } }) =>
    promptRoutes({ api: runtime.services.promptApi, stream: runtime.services.promptStream }),
  schedules: [
    {
      name: 'prompt-reconcile',
      description: 'Refunds and undoes prompts whose workflow was terminated or timed out before its compensation ran.',
      workflow: promptReconcileWorkflow,
      args: [{ minAgeSeconds: 300 }],
      spec: { intervals: [{ every: '10 minutes' }] },
    },
  ] satisfies MaintenanceSchedule[],
};
