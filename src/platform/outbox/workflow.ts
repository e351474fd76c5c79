import { defineWorkflow } from '../temporal/contract';
import type { SweepInput } from '../temporal/sweeps';

/** Every minute: the outbox safety net (the `outbox-sweep` schedule; the id is for a run started by hand). */
export const outboxSweepWorkflow = defineWorkflow<[SweepInput], unknown>({
  type: 'outboxSweepWorkflow',
  id: () => 'outbox-sweep',
});
