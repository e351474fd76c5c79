import type { OutboxHandler } from '../platform/outbox/relay';
import { onEvent } from '../platform/outbox/relay';
import type { TemporalHandle } from '../platform/temporal/connection';
import { runScheduleChanged } from './events';
import { applyRunSchedule } from './temporal';

/**
 * `run_schedule.changed` → the Temporal Schedule made to match. Idempotent, and an older revision
 * never overwrites a newer one; while Temporal is unreachable the relay keeps it (transient).
 */
export const applyScheduleChange = (temporal: TemporalHandle): OutboxHandler<typeof runScheduleChanged> =>
  onEvent(runScheduleChanged, (event) => applyRunSchedule(temporal, event.workspace_id, event.payload));
