import { DomainError } from './errors';

/**
 * The one place that decides whether a failure is the infrastructure being briefly unavailable
 * (Postgres or Temporal unreachable, restarting, overloaded, or a transaction that lost a race)
 * rather than something about the request. Such a failure never ends durable work: activities
 * retry it, the outbox keeps its event, and the API answers 503 with Retry-After (issue 24).
 */
export type TransientKind = 'database' | 'temporal';

// Socket-level failures, whoever's connection they are (pg, the Temporal client's gRPC channel).
const NETWORK_CODES = new Set([
  'ECONNREFUSED',
  'ECONNRESET',
  'ECONNABORTED',
  'EPIPE',
  'ETIMEDOUT',
  'EHOSTUNREACH',
  'ENETUNREACH',
  'EAI_AGAIN',
]);

/**
 * Postgres SQLSTATEs about the server's state, not the statement: connection exceptions (class 08),
 * admin or crash shutdown and "cannot connect now" (57P01–57P03), too many connections and other
 * resource shortages (class 53), serialization failures and deadlocks (40001, 40P01), a lock not
 * available, and the idle-in-transaction timeout.
 */
function transientSqlState(code: string): boolean {
  return (
    code.startsWith('08') ||
    code.startsWith('53') ||
    ['57P01', '57P02', '57P03', '40001', '40P01', '55P03', '25P03'].includes(code)
  );
}

// pg and pg-pool say these in words only (no code): a dropped socket, an acquire or connect timeout.
const DATABASE_WORDS = new RegExp(
  [
    'Connection terminated',
    'timeout exceeded when trying to connect',
    'connection timeout',
    'Client has encountered a connection error',
    'Connection refused',
    'terminating connection',
  ].join('|'),
  'i',
);

// gRPC status codes of a Temporal frontend that is down, restarting or shedding load.
const GRPC_UNAVAILABLE = 14;
const GRPC_DEADLINE_EXCEEDED = 4;
const GRPC_RESOURCE_EXHAUSTED = 8;
const TEMPORAL_WORDS = /Failed to connect before the deadline|No connection established|UNAVAILABLE|TransportError/i;

/** Every error reachable from `error` through `cause` and an AggregateError's `errors`. */
function* chain(error: unknown, depth = 0): Generator<unknown> {
  if (error === null || error === undefined || depth > 8) return;
  yield error;
  if (typeof error !== 'object') return;
  const { cause, errors, driverError } = error as { cause?: unknown; errors?: unknown; driverError?: unknown };
  if (driverError) yield* chain(driverError, depth + 1);
  if (cause) yield* chain(cause, depth + 1);
  if (Array.isArray(errors)) for (const inner of errors) yield* chain(inner, depth + 1);
}

function kindOf(error: unknown): TransientKind | undefined {
  if (!(error instanceof Error)) return undefined;
  const code = (error as { code?: unknown }).code;
  const name = error.constructor?.name ?? error.name;
  const fromTemporal = /ServiceError|GrpcError|TransportError|ConnectionError/.test(name);
  if (typeof code === 'number' && [GRPC_UNAVAILABLE, GRPC_DEADLINE_EXCEEDED, GRPC_RESOURCE_EXHAUSTED].includes(code)) {
    return 'temporal';
  }
  if (fromTemporal && TEMPORAL_WORDS.test(error.message)) return 'temporal';
  if (typeof code === 'string' && NETWORK_CODES.has(code)) return fromTemporal ? 'temporal' : 'database';
  if (typeof code === 'string' && /^[0-9A-Z]{5}$/.test(code) && transientSqlState(code)) return 'database';
  if (DATABASE_WORDS.test(error.message)) return 'database';
  return undefined;
}

/**
 * What is briefly unavailable behind `error` (walking its causes), or undefined when it is not
 * transient. A domain error has said what it is (a provider down is a 502, not our outage), so the
 * walk stops there.
 */
export function transientKind(error: unknown): TransientKind | undefined {
  for (const inner of chain(error)) {
    if (inner instanceof DomainError) return undefined;
    const kind = kindOf(inner);
    if (kind) return kind;
  }
  return undefined;
}

export const isTransient = (error: unknown): boolean => transientKind(error) !== undefined;

/** Seconds a client is told to wait before retrying (the 503's Retry-After). */
export const TRANSIENT_RETRY_AFTER_SECONDS = 5;
