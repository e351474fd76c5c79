import type { OutboxHandler } from '../platform/outbox/relay';
import { onEvent } from '../platform/outbox/relay';
import type { TemporalHandle } from '../platform/temporal/connection';
import { runScheduleChanged } from './events';
import type { ScheduleRowExists } from './temporal';
import { applyWhileRowExists } from './temporal';

/**
 * `run_schedule.changed` → the Temporal Schedule made to match. Idempotent, and an older revision
 * never overwrites a newer one, nor does a late definition outlive its row; while Temporal is
 * unreachable the relay keeps it (transient).
 */
export const applyScheduleChange = (
  temporal: TemporalHandle,
  rowExists: ScheduleRowExists,
): OutboxHandler<typeof runScheduleChanged> =>
  onEvent(runScheduleChanged, (event) => applyWhileRowExists(temporal, rowExists, event.workspace_id, event.payload));
