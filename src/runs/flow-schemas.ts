import { z } from 'zod';
import { LIMITS } from '../rules/limits';

// Issue 43 item 2: how a run queues. `flow` sits beside `concurrency` on a dispatch and on the run
// templates of triggers and schedules; only `priority` is built.

const { priority: PRIORITY } = LIMITS.runs;

export const RunPriority = z
  .number()
  .int()
  .min(PRIORITY.highest)
  .max(PRIORITY.levels)
  .describe(
    `${PRIORITY.highest} (first) to ${PRIORITY.levels}; default ${PRIORITY.default}. While runs wait for a worker, ` +
      'a lower number starts first. Between workspaces the queue is fair within each priority: each workspace ' +
      'gets its share whatever another has queued.',
  );

export const RunFlow = z
  .strictObject({ priority: RunPriority.optional() })
  .describe('How the run queues (issue 43).')
  .meta({ id: 'RunFlow' });
export type RunFlow = z.output<typeof RunFlow>;

/** The priority a run queues with: its `flow.priority`, else the default. */
export const priorityOf = (flow: RunFlow | undefined): number => flow?.priority ?? PRIORITY.default;
