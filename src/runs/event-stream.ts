import type { Context } from 'koa';
import type { EventStreamOptions, EventStreams, StreamAdmission, StreamEnding } from '../platform/api/sse';
import { standingScopeOf } from '../platform/auth/credential-liveness';
import type { Principal } from '../platform/auth/principal';
import type { NotifyListener } from '../platform/db/notify-listener';
import type { Scope, ScopedRead } from '../platform/db/unit-of-work';
import { BadRequestError, NotFoundError } from '../platform/errors';
import type { Logger } from '../platform/logger';
import { LIMITS } from '../rules/limits';
import type { RunStatus } from './entities';
import { FINISHED_STATUSES } from './entities';
import type { WorkspaceEventsQuery } from './event-schemas';

/** A `run_events` row as `weft_scoped_read` answers it (JSON: timestamps as ISO strings). */
export interface EventRow {
  id: number;
  seq: number;
  execution_id: string;
  type: string;
  data: Record<string, unknown>;
  audit_seq: number | null;
  audit_hash: string | null;
  audit_own: boolean;
  created_at: string;
}

const COLUMNS = `ev.id, ev.seq, ev.execution_id, ev.type, ev.data, ev.audit_seq, ev.audit_hash, ev.audit_own,
  ev.created_at`;
const PAGE = LIMITS.runs.events.pageSize;

const view = (row: EventRow) => ({
  id: row.id,
  seq: Number(row.seq),
  execution_id: row.execution_id,
  type: row.type,
  at: new Date(row.created_at).toISOString(),
  data: row.data,
  audit:
    row.audit_seq === null
      ? null
      : { seq: row.audit_seq, hash: row.audit_hash!, link: row.audit_own ? ('own' as const) : ('head' as const) },
});

// A row read once for many streams (a shared read) is serialized once.
const serialized = new WeakMap<EventRow, string>();
const frame = (sseId: number, row: EventRow) => {
  let data = serialized.get(row);
  if (data === undefined) {
    data = JSON.stringify(view(row));
    serialized.set(row, data);
  }
  return `id: ${sseId}\nevent: ${row.type}\ndata: ${data}\n\n`;
};

/**
 * How a run stream writes its events: Weft's own (`RunEvent` frames), or another protocol's derived
 * from the same rows (AG-UI, src/ag-ui). `start` is called once per stream, before it opens, with the
 * cursor it resumes after (0: the run's first event).
 */
export interface RunStreamFormat {
  start(scope: Scope, executionId: string, after: number): Promise<RunStreamEncoder>;
}

/** One stream's encoder: it may keep what it has seen of the run (which steps are open). */
export interface RunStreamEncoder {
  /** The frames of these rows, in order, written at once; a row's last frame carries its id as `id:`. */
  encode(rows: readonly EventRow[]): string | Promise<string>;
  /** The stream's final frames in the format's words (Weft's `error` and `reconnect` by default). */
  ending?: StreamEnding;
  /** True once the last `encode` ended the stream in the format's words (AG-UI's interrupt) before the run did. */
  ended?(): boolean;
}

const WEFT_FORMAT: RunStreamFormat = {
  start: async () => ({ encode: (rows) => rows.map((row) => frame(row.id, row)).join('') }),
};

/**
 * The workspace stream's filters, each a condition on the run (`e`) given its bound parameter.
 * Adding a filter is one line here and one field in `WorkspaceEventsQuery`.
 */
const RUN_FILTERS: { [K in keyof WorkspaceEventsQuery]-?: (param: string) => string } = {
  status: (param) => `e.status = ${param}`,
  agent: (param) => `e.agent = ${param}`,
  tag: (param) => `${param} = ANY (e.tags)`,
};

/** Last-Event-ID as a number; a malformed one is a 400 before the stream opens. */
function lastEventId(ctx: Context): number | null {
  const header = ctx.get('Last-Event-ID');
  if (!header) return null;
  if (!/^\d{1,15}$/.test(header)) throw new BadRequestError('Last-Event-ID must be an event id (digits)');
  return Number(header);
}

/**
 * The run event streams (issue 26): `GET /v1/runs/{execution_id}/events` and `GET /v1/runs/events`.
 * Each stream subscribes to the process's one LISTEN connection for its workspace, then replays
 * what the table holds after its cursor, then reads again whenever a notification names something
 * newer (one read at a time; notifications during a read make one more). Rows are read through
 * `weft_scoped_read` as the stream's credential, so RLS decides what a stream can see, and each read
 * re-checks that credential (`streams`, platform/api/sse.ts: a lapsed one ends the stream with an
 * `error` event, and the stream ends at its lifetime with `reconnect`); the notifications carry ids
 * only. Quiet streams get a keep-alive comment every `keepAliveMs`. A run stream may be written in
 * another protocol's words (`RunStreamFormat`: AG-UI's, issue 42 item 3), with the same limits and checks.
 */
export function createRunEventStreams(deps: {
  read: ScopedRead;
  listener: NotifyListener;
  logger: Logger;
  keepAliveMs: number;
  streams: EventStreams;
}) {
  const { read, listener, logger } = deps;

  /**
   * A run's events after `after`, as `scope` may read them. Streams of the same run, scope (its
   * credential included) and cursor share one read in flight (a hundred followers of one run cost one
   * query per commit). A shared read may have begun before the commit a joiner was told of; `followRun`
   * reads again then.
   */
  const inFlight = new Map<string, Promise<EventRow[]>>();
  function runEventsAfter(scope: Scope, executionId: string, after: number): Promise<EventRow[]> {
    const credential = scope.standing ? `${scope.standing.kind}|${scope.standing.credentialId}` : '';
    const key = `${scope.workspaceId}|${scope.userId ?? ''}|${credential}|${executionId}|${after}`;
    let pending = inFlight.get(key);
    if (!pending) {
      pending = read<EventRow>(
        scope,
        `SELECT ${COLUMNS} FROM run_events ev WHERE ev.execution_id = $1::uuid AND ev.id > $2::int
         ORDER BY ev.id LIMIT ${PAGE}`,
        [executionId, after],
      ).finally(() => inFlight.delete(key));
      inFlight.set(key, pending);
    }
    return pending;
  }

  /**
   * Opens the response as an event stream and drives it: `pull` writes what is new and answers
   * whether the stream is done; it runs once at once, then on each `wanted` notification and after
   * each reconnect of the listener (`resynced` first), never twice at a time. `cursor` is what the
   * client would resume from (its `reconnect` event's id at the stream's lifetime).
   */
  async function open(
    ctx: Context,
    principal: Principal,
    pull: (write: (chunk: string) => void) => Promise<boolean>,
    resynced: () => void,
    wanted: (payload: string) => boolean,
    cursor: () => number,
    options: Pick<EventStreamOptions, 'admission' | 'ending'> = {},
  ): Promise<void> {
    let running: Promise<void> | null = null;
    let again = false;
    let keepAlive: NodeJS.Timeout | undefined;
    let unsubscribe = () => {};
    const stream = deps.streams.create(principal, {
      ...options,
      resumeFrom: cursor,
      onEnd: () => {
        clearInterval(keepAlive);
        unsubscribe();
      },
    });
    const pump = () => {
      if (stream.ended) return;
      if (running) {
        again = true;
        return;
      }
      running = (async () => {
        do {
          again = false;
          try {
            if (await pull(stream.write)) stream.end();
          } catch (error) {
            if (!(await stream.lapsed(error))) {
              logger.warn({ err: error }, 'run event stream read failed; ending the stream');
              stream.end();
            }
          }
        } while (again && !stream.ended);
      })().finally(() => {
        running = null;
      });
    };
    // Subscribed before the first read: a commit after it is in the read or notifies.
    unsubscribe = await listener.subscribe(principal.workspaceId, {
      notify: (payload) => {
        if (wanted(payload)) pump();
      },
      resync: () => {
        resynced();
        pump();
      },
    });
    stream.respond(ctx);
    keepAlive = setInterval(() => stream.write(': keep-alive\n\n'), deps.keepAliveMs);
    keepAlive.unref();
    pump();
  }

  return {
    /**
     * One run's events: replayed after Last-Event-ID, then live, ending after `run.finished`; a 404
     * before the stream opens for a run the credential cannot see. `format` writes them in another
     * protocol's words; `admission` is the stream's place when the caller took it first (released here
     * when the stream does not open); `after` is the cursor to start after when no Last-Event-ID is given.
     */
    async followRun(
      ctx: Context,
      principal: Principal,
      executionId: string,
      options: { format?: RunStreamFormat; admission?: StreamAdmission; after?: number } = {},
    ): Promise<void> {
      const scope = standingScopeOf(principal);
      let after: number;
      let finishedAtOpen: boolean;
      let encoder: RunStreamEncoder;
      try {
        after = lastEventId(ctx) ?? options.after ?? 0;
        const [run] = await read<{ status: RunStatus }>(
          scope,
          `SELECT status FROM run_executions WHERE id = $1::uuid`,
          [executionId],
        );
        if (!run) throw new NotFoundError({ error: 'run_not_found', execution_id: executionId });
        // A run finished before it was opened without a run.finished (older than the log) ends after the replay.
        finishedAtOpen = FINISHED_STATUSES.includes(run.status);
        encoder = await (options.format ?? WEFT_FORMAT).start(scope, executionId, after);
      } catch (error) {
        options.admission?.release();
        throw error;
      }
      // The highest id a notification named: a read that ends short of it (a shared read that began
      // before that commit) is followed by another.
      let target = 0;
      await open(
        ctx,
        principal,
        async (write) => {
          for (let short = 0; ; ) {
            const rows = await runEventsAfter(scope, executionId, after);
            const last = rows.findIndex((row) => row.type === 'run.finished');
            const page = last < 0 ? rows : rows.slice(0, last + 1);
            if (page.length > 0) {
              write(await encoder.encode(page));
              after = page.at(-1)!.id;
              if (encoder.ended?.()) return true;
            }
            if (last >= 0) return true;
            if (rows.length === PAGE) continue;
            // At most one more read: one begun now sees every commit already notified.
            if (after >= target || ++short > 1) return finishedAtOpen;
          }
        },
        () => {},
        (payload) => {
          const [, execution, id] = payload.split(' ');
          if (execution !== executionId || Number(id) <= after) return false;
          target = Math.max(target, Number(id));
          return true;
        },
        () => after,
        { admission: options.admission, ...(encoder.ending ? { ending: encoder.ending } : {}) },
      );
    },

    /**
     * Every run's events in the workspace, filtered by the run's status and agent when read. Live
     * from now, or from the workspace sequence given as Last-Event-ID. A notification is read
     * back by its run and id, so a commit that took an earlier `seq` but committed later is not missed.
     */
    async followWorkspace(ctx: Context, principal: Principal, query: WorkspaceEventsQuery): Promise<void> {
      const scope = standingScopeOf(principal);
      const given = lastEventId(ctx);
      const [start] =
        given === null
          ? await read<{ seq: number }>(scope, `SELECT coalesce(max(seq), 0) AS seq FROM run_events`)
          : [{ seq: given }];
      let floor = Number(start!.seq);
      const filters = Object.entries(query).filter(([, value]) => value !== undefined) as [
        keyof WorkspaceEventsQuery,
        string,
      ][];
      const values = filters.map(([, value]) => value);
      // The filters' parameters follow the read's own `bound` ones (weft_scoped_read binds at most 8).
      const sql = (where: string, bound: number) =>
        `SELECT ${COLUMNS} FROM run_events ev JOIN run_executions e ON e.id = ev.execution_id
         WHERE ${where}${filters.map(([name], at) => ` AND ${RUN_FILTERS[name](`$${bound + at + 1}::text`)}`).join('')}
         ORDER BY ev.seq LIMIT ${PAGE}`;
      // What each run has been read up to, so a notification reads only what is new of its run.
      const seen = new Map<string, number>();
      const notified = new Map<string, number>();
      let replayed = given === null;
      let highest = floor;
      const emit = (write: (chunk: string) => void, row: EventRow) => {
        if ((seen.get(row.execution_id) ?? 0) >= row.id) return;
        // A long-lived stream forgets the runs it has seen now and then: the floor rises to what it
        // has sent, so a forgotten run's earlier events are not read again.
        if (seen.size >= LIMITS.runs.events.workspaceRunsTracked) {
          seen.clear();
          floor = highest;
        }
        seen.set(row.execution_id, row.id);
        highest = Math.max(highest, Number(row.seq));
        write(frame(Number(row.seq), row));
      };
      await open(
        ctx,
        principal,
        async (write) => {
          // A Last-Event-ID (or a reconnect of the listener) reads forward by seq first.
          while (!replayed) {
            const rows = await read<EventRow>(scope, sql('ev.seq > $1::bigint', 1), [highest, ...values]);
            for (const row of rows) emit(write, row);
            if (rows.length < PAGE) replayed = true;
          }
          for (const [execution, upTo] of [...notified]) {
            notified.delete(execution);
            const rows = await read<EventRow>(
              scope,
              sql('ev.execution_id = $2::uuid AND ev.id > $3::int AND ev.seq > $1::bigint', 3),
              [floor, execution, seen.get(execution) ?? 0, ...values],
            );
            for (const row of rows) emit(write, row);
            // Events the filters left out count as read, so a run that matches later does not replay them.
            if ((seen.get(execution) ?? 0) < upTo && rows.length < PAGE) seen.set(execution, upTo);
          }
          return false;
        },
        () => {
          replayed = false;
        },
        (payload) => {
          const [, execution, id] = payload.split(' ') as [string, string, string];
          if ((seen.get(execution) ?? 0) >= Number(id)) return false;
          notified.set(execution, Math.max(notified.get(execution) ?? 0, Number(id)));
          return true;
        },
        () => highest,
      );
    },
  };
}

export type RunEventStreams = ReturnType<typeof createRunEventStreams>;
