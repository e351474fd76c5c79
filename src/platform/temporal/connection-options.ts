import { readFileSync } from 'node:fs';
import type { TLSConfig } from '@temporalio/client';
import type { Config } from '../config';
import { ConfigError } from '../config';

/** What both the client's `Connection` and the worker's `NativeConnection` take to reach the server. */
export interface TemporalConnectionOptions {
  address: string;
  /** `false`: plaintext (the dev server); an object: TLS, with mTLS when it holds a client pair. */
  tls: TLSConfig | false;
  apiKey?: string;
}

export type TemporalConnectionConfig = Pick<
  Config,
  | 'TEMPORAL_ADDRESS'
  | 'TEMPORAL_TLS'
  | 'TEMPORAL_TLS_CA_PATH'
  | 'TEMPORAL_TLS_CERT_PATH'
  | 'TEMPORAL_TLS_KEY_PATH'
  | 'TEMPORAL_TLS_SERVER_NAME'
  | 'TEMPORAL_API_KEY'
>;

/**
 * The connection options from configuration. TLS is on when asked for, or, when TEMPORAL_TLS is unset,
 * as soon as an API key or any TLS setting is present (Temporal Cloud needs TLS; the Temporal CLI
 * decides the same way). Files are read here, once, so a missing certificate fails at start.
 */
export function temporalConnectionOptions(
  config: TemporalConnectionConfig,
  readFile: (path: string) => Uint8Array = (path) => readFileSync(path),
): TemporalConnectionOptions {
  const tlsSettings = [
    config.TEMPORAL_TLS_CA_PATH,
    config.TEMPORAL_TLS_CERT_PATH,
    config.TEMPORAL_TLS_KEY_PATH,
    config.TEMPORAL_TLS_SERVER_NAME,
  ].some(Boolean);
  if (config.TEMPORAL_TLS === false && tlsSettings) {
    throw new ConfigError('TEMPORAL_TLS=false contradicts the TEMPORAL_TLS_* settings that are set');
  }
  if (Boolean(config.TEMPORAL_TLS_CERT_PATH) !== Boolean(config.TEMPORAL_TLS_KEY_PATH)) {
    throw new ConfigError('TEMPORAL_TLS_CERT_PATH and TEMPORAL_TLS_KEY_PATH go together (mTLS)');
  }
  const useTls = config.TEMPORAL_TLS ?? (tlsSettings || Boolean(config.TEMPORAL_API_KEY));
  const read = (path: string, variable: string) => {
    try {
      return readFile(path);
    } catch (error) {
      throw new ConfigError(`${variable}: cannot read ${path} (${(error as Error).message})`);
    }
  };
  let tls: TLSConfig | false = false;
  if (useTls) {
    tls = {};
    if (config.TEMPORAL_TLS_SERVER_NAME) tls.serverNameOverride = config.TEMPORAL_TLS_SERVER_NAME;
    if (config.TEMPORAL_TLS_CA_PATH) {
      tls.serverRootCACertificate = read(config.TEMPORAL_TLS_CA_PATH, 'TEMPORAL_TLS_CA_PATH');
    }
    if (config.TEMPORAL_TLS_CERT_PATH && config.TEMPORAL_TLS_KEY_PATH) {
      tls.clientCertPair = {
        crt: read(config.TEMPORAL_TLS_CERT_PATH, 'TEMPORAL_TLS_CERT_PATH'),
        key: read(config.TEMPORAL_TLS_KEY_PATH, 'TEMPORAL_TLS_KEY_PATH'),
      };
    }
  }
  return {
    address: config.TEMPORAL_ADDRESS,
    tls,
    ...(config.TEMPORAL_API_KEY ? { apiKey: config.TEMPORAL_API_KEY } : {}),
  };
}

/** gRPC's first wait before a reconnect attempt (its own default), unless the cap is shorter. */
const INITIAL_RECONNECT_BACKOFF_MS = 1000;

/**
 * The client `Connection`'s channel arguments: its reconnect backoff capped at
 * TEMPORAL_RECONNECT_BACKOFF_MAX_MS. gRPC multiplies the wait by 1.6 per failed attempt up to 2
 * minutes, so after a long Temporal outage the client would find the returned server 40–70 s late
 * (issue 44 item 6); capped, it finds it within the cap. The SDK's keepalive arguments stay (the
 * SDK merges these over them). The worker's `NativeConnection` (the Rust core) takes no such
 * argument: it reconnects when its next poll is retried, and the core retries a failed poll after
 * 0.2 s doubling to at most 10 s (±20 %), fixed in the SDK (sdk-core `task_poll_retry_policy`; the
 * bridge passes no retry settings). Its pollers fail and retry together, so after a long outage a
 * worker would find the returned server 0–12 s late: `runWorker` replaces the worker instead.
 */
export function temporalChannelArgs(
  config: Pick<Config, 'TEMPORAL_RECONNECT_BACKOFF_MAX_MS'>,
): Record<'grpc.initial_reconnect_backoff_ms' | 'grpc.max_reconnect_backoff_ms', number> {
  const max = config.TEMPORAL_RECONNECT_BACKOFF_MAX_MS;
  return {
    'grpc.initial_reconnect_backoff_ms': Math.min(INITIAL_RECONNECT_BACKOFF_MS, max),
    'grpc.max_reconnect_backoff_ms': max,
  };
}
