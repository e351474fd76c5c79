import { standingScopeOf } from '../platform/auth/credential-liveness';
import type { Principal } from '../platform/auth/principal';
import type { NotifyListener } from '../platform/db/notify-listener';
import type { ScopedRead } from '../platform/db/unit-of-work';
import { LIMITS } from '../rules/limits';
import type { RunEventRow } from './events';

const PAGE = LIMITS.runs.events.pageSize;

/** Reads a run's events after an id, as the credential may (RLS; each read re-checks the credential). */
export function createRunEventReader(read: ScopedRead) {
  return (principal: Principal, executionId: string, after: number) =>
    read<RunEventRow>(
      standingScopeOf(principal),
      `SELECT ev.id, ev.execution_id, ev.type, ev.data, ev.created_at FROM run_events ev
       WHERE ev.execution_id = $1::uuid AND ev.id > $2::int ORDER BY ev.id LIMIT ${PAGE}`,
      [executionId, after],
    );
}
export type RunEventReader = ReturnType<typeof createRunEventReader>;

/**
 * A run's events after `after`, replayed then live, until `run.finished` or until the consumer stops
 * (`signal` aborts). Live delivery is the process's one LISTEN connection for run events
 * (`runEventsListener`): a notification naming this run wakes the next read; a reconnect of the
 * listener wakes it too, so nothing committed meanwhile is missed. Stateless: the cursor is the
 * client's (the event id), everything else is the table.
 */
export async function* followRunEvents(
  deps: { readEvents: RunEventReader; listener: NotifyListener },
  principal: Principal,
  executionId: string,
  after: number,
  signal?: AbortSignal,
): AsyncGenerator<RunEventRow, void, undefined> {
  let wake: (() => void) | null = null;
  let pending = false;
  const poke = () => {
    pending = true;
    wake?.();
  };
  const unsubscribe = await deps.listener.subscribe(principal.workspaceId, {
    notify: (payload) => {
      if (payload.split(' ')[1] === executionId) poke();
    },
    resync: poke,
  });
  // A consumer that went away (the client closed the stream) ends a wait at once, not at the next event.
  signal?.addEventListener('abort', poke);
  try {
    for (let cursor = after; !signal?.aborted; ) {
      pending = false;
      const rows = await deps.readEvents(principal, executionId, cursor);
      for (const row of rows) {
        cursor = row.id;
        yield row;
        if (row.type === 'run.finished') return;
      }
      if (rows.length === PAGE || pending) continue;
      await new Promise<void>((resolve) => {
        wake = resolve;
        if (pending) resolve();
      });
      wake = null;
    }
  } finally {
    signal?.removeEventListener('abort', poke);
    unsubscribe();
  }
}
