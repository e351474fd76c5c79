import { PassThrough } from 'node:stream';
import type { Context } from 'koa';
import { LIMITS } from '../../rules/limits';
import type { CredentialLapse } from '../auth/credential-liveness';
import { credentialLapse, standingScopeOf } from '../auth/credential-liveness';
import type { Principal } from '../auth/principal';
import type { Scope, ScopedRead } from '../db/unit-of-work';
import { CredentialLapsed } from '../db/unit-of-work';
import { RateLimitedError } from '../errors';
import type { Logger } from '../logger';

/**
 * The final event of a stream whose credential lapsed is `event: error` with `data: {status: 401,
 * detail, error_code}` (the prompt stream's error shape), `error_code` one of these; one that reached
 * its lifetime ends with `event: reconnect`, `id:` its cursor and `data: {detail, last_event_id}`.
 */
const LAPSE_DETAIL: Record<CredentialLapse, string> = {
  credential_revoked: "The stream's credential was revoked",
  credential_expired: "The stream's credential has expired",
  member_removed: "The stream's user is no longer a member of the workspace",
};

/** A stream route's 429, for the OpenAPI document (the limits of issue 43 item 3). */
export const TOO_MANY_STREAMS =
  'Too many requests, or `too_many_streams`: the credential or the workspace already holds as many open event ' +
  `streams as allowed (by default ${LIMITS.streams.perCredential} and ${LIMITS.streams.perWorkspace}); ` +
  'retry after `Retry-After` seconds';

/** An event stream's response body, open or ended. Writes after the end are dropped. */
export interface EventStream {
  /** The scope of the stream's reads: each re-checks the credential and throws `CredentialLapsed` when it lapsed. */
  readonly scope: Scope;
  readonly ended: boolean;
  write(chunk: string): void;
  /** Ends the stream (idempotent). */
  end(): void;
  /**
   * When `error` says the credential lapsed (a read threw `CredentialLapsed`), ends the stream with its
   * final `error` event and answers true; any other error is the caller's.
   */
  lapsed(error: unknown): Promise<boolean>;
  /** Sends the headers and the body, and starts the re-checks and the lifetime. */
  respond(ctx: Context): void;
}

export interface EventStreamOptions {
  /** Called once when the stream ends, whatever ended it (unsubscribe, clear timers). */
  onEnd?: () => void;
  /** Called once when the credential lapsed, before the final event (settle what the stream holds). */
  onLapse?: (lapse: CredentialLapse) => void;
  /**
   * A resumable stream's cursor (what the client would send as Last-Event-ID): such a stream ends at its
   * lifetime with a `reconnect` event. A stream without one ends by itself (a prompt's answer).
   */
  resumeFrom?: () => number;
  /** The stream's place, taken before work the caller must undo on a refusal; else `create` takes it. */
  admission?: StreamAdmission;
  /** The final frames in another protocol's words (AG-UI's); Weft's `error` and `reconnect` events by default. */
  ending?: StreamEnding;
}

/** How a stream says it ends: its credential lapsed, or it reached its lifetime (resume from `last_event_id`). */
export interface StreamEnding {
  lapsed(body: { status: 401; detail: string; error_code: CredentialLapse }): string;
  reconnect(body: { detail: string; last_event_id: number }): string;
}

const WEFT_ENDING: StreamEnding = {
  lapsed: (body) => `event: error\ndata: ${JSON.stringify(body)}\n\n`,
  reconnect: (body) => `id: ${body.last_event_id}\nevent: reconnect\ndata: ${JSON.stringify(body)}\n\n`,
};

/** A stream's place among its credential's and workspace's open streams; released when it ends. */
export interface StreamAdmission {
  release(): void;
}

/**
 * Event streams that follow their credential (issue 39, review NM-1): a stream's reads carry the
 * credential's check (`standingScopeOf`), a timer re-checks it every `recheckMs` and at the credential's
 * own expiry, and a lapse ends the stream with a final `error` event naming why. A resumable stream ends
 * after `maxLifetimeMs` with a `reconnect` event. One place for every stream: run events, workspace
 * events and prompt streams.
 */
export function createEventStreams(deps: {
  read: ScopedRead;
  logger: Logger;
  recheckMs: number;
  maxLifetimeMs: number;
  /** Open streams at most per credential and per workspace, in this process (issue 43 item 3). */
  maxOpen: { credential: number; workspace: number };
  /** Bytes a stream may hold unread by its client before it is cut off. */
  maxBufferedBytes: number;
}) {
  const { read, logger } = deps;
  const open = { credential: new Map<string, number>(), workspace: new Map<string, number>() };

  /**
   * Takes a place for a stream of `principal`, or refuses with 429 when its credential or its
   * workspace already holds as many open streams as allowed (review NM-2: one key held 150).
   */
  function admit(principal: Principal): StreamAdmission {
    const keys = {
      credential: `${principal.credential.kind}:${principal.credential.id}`,
      workspace: principal.workspaceId,
    };
    for (const by of ['credential', 'workspace'] as const) {
      const limit = deps.maxOpen[by];
      if ((open[by].get(keys[by]) ?? 0) >= limit) {
        throw new RateLimitedError(LIMITS.streams.retryAfterSeconds, {
          error: 'too_many_streams',
          message: `At most ${limit} event streams may be open at once per ${by}`,
          limit,
          per: by,
        });
      }
    }
    for (const by of ['credential', 'workspace'] as const) open[by].set(keys[by], (open[by].get(keys[by]) ?? 0) + 1);
    let released = false;
    return {
      release() {
        if (released) return;
        released = true;
        for (const by of ['credential', 'workspace'] as const) {
          const left = (open[by].get(keys[by]) ?? 1) - 1;
          if (left > 0) open[by].set(keys[by], left);
          else open[by].delete(keys[by]);
        }
      },
    };
  }

  function create(principal: Principal, options: EventStreamOptions = {}): EventStream {
    const admission = options.admission ?? admit(principal);
    const ending = options.ending ?? WEFT_ENDING;
    const body = new PassThrough();
    const scope = standingScopeOf(principal);
    const timers: NodeJS.Timeout[] = [];
    let ended = false;
    let lapsing: Promise<void> | undefined;
    let response: Context['res'] | undefined;

    const end = (cutOff = false) => {
      if (ended) return;
      ended = true;
      for (const timer of timers) clearTimeout(timer);
      admission.release();
      options.onEnd?.();
      // A client that stopped reading gets no more, not even what waits for it.
      if (cutOff) {
        body.destroy();
        response?.destroy();
      } else body.end();
    };
    const write = (chunk: string) => {
      if (ended) return;
      body.write(chunk);
      if (body.writableLength > deps.maxBufferedBytes) {
        logger.info({ buffered: body.writableLength }, 'event stream cut off: its client does not read');
        end(true);
      }
    };
    const lapse = () => {
      lapsing ??= (async () => {
        const why = await credentialLapse(read, principal).catch((error: unknown) => {
          logger.warn({ err: error }, 'could not tell why a stream credential lapsed');
          return 'credential_revoked' as const;
        });
        if (ended) return;
        options.onLapse?.(why);
        write(ending.lapsed({ status: 401, detail: LAPSE_DETAIL[why], error_code: why }));
        end();
      })();
      return lapsing;
    };
    // One statement: the check alone, as every read of the stream makes it.
    const recheck = async () => {
      if (ended) return;
      try {
        await read(scope, 'SELECT true AS live');
      } catch (error) {
        if (error instanceof CredentialLapsed) await lapse();
        // Not a verdict (the database did not answer): the reads still carry the check, so nothing leaks.
        else logger.warn({ err: error }, 'stream credential re-check failed; retried at the next one');
      }
    };
    const later = (ms: number, work: () => void) => {
      const timer = setTimeout(work, ms);
      timer.unref();
      timers.push(timer);
    };

    return {
      scope,
      get ended() {
        return ended;
      },
      write,
      end: () => end(),
      async lapsed(error) {
        if (!(error instanceof CredentialLapsed)) return false;
        await lapse();
        return true;
      },
      respond(ctx) {
        response = ctx.res;
        ctx.res.once('close', () => end());
        ctx.status = 200;
        ctx.set({
          'Content-Type': 'text/event-stream; charset=utf-8',
          'Cache-Control': 'no-cache',
          Connection: 'keep-alive',
        });
        ctx.body = body;
        // Flush the headers at once, so a client sees the stream open before the first event.
        body.write(': stream open\n\n');
        const interval = setInterval(() => void recheck(), deps.recheckMs);
        interval.unref();
        timers.push(interval);
        // A credential that expires before the stream would end is re-checked at that moment.
        const expiresIn = (principal.credential.expiresAt?.getTime() ?? Number.POSITIVE_INFINITY) - Date.now();
        if (expiresIn < deps.maxLifetimeMs) later(Math.max(expiresIn, 0) + 1, () => void recheck());
        const { resumeFrom } = options;
        if (resumeFrom) {
          later(deps.maxLifetimeMs, () => {
            if (ended || lapsing) return;
            const seconds = Math.round(deps.maxLifetimeMs / 1000);
            const detail = `The stream reached its lifetime (${seconds} s); resume with Last-Event-ID`;
            write(ending.reconnect({ detail, last_event_id: resumeFrom() }));
            end();
          });
        }
      },
    };
  }

  return { admit, create };
}

export type EventStreams = ReturnType<typeof createEventStreams>;
