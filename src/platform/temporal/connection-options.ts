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
