import type { MaintenanceSchedule } from '../platform/temporal/schedules';
import type { PromptApi } from './dispatcher';
import { PromptRun, PromptWrite } from './entities';
import { promptRoutes } from './routes';
import type { createPromptStream } from './stream';
import { promptReconcileWorkflow } from './workflow';

/** Free-text prompts, their audit rows and the reconcile safety net. */
export const promptFeature = {
  name: 'prompt',
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
