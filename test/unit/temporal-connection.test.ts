import { expect } from 'chai';
import { ConfigError, loadConfig } from '../../src/platform/config';
import { temporalChannelArgs, temporalConnectionOptions } from '../../src/platform/temporal/connection-options';

// Stands in for the file system: each path reads as its own name.
const files = (path: string) => new TextEncoder().encode(`contents of ${path}`);
const options = (env: Record<string, string>) => temporalConnectionOptions(loadConfig(env), files);
const text = (bytes: Uint8Array | undefined) => (bytes ? Buffer.from(bytes).toString() : undefined);

describe('Temporal connection options from configuration (unit)', () => {
  it('plaintext to the local dev server by default', () => {
    expect(options({})).to.deep.equal({ address: '127.0.0.1:7233', tls: false });
  });

  it('TLS with the system roots when TEMPORAL_TLS=true', () => {
    expect(options({ TEMPORAL_TLS: 'true', TEMPORAL_ADDRESS: 'temporal.internal:7233' })).to.deep.equal({
      address: 'temporal.internal:7233',
      tls: {},
    });
  });

  it('mTLS: the CA, the client pair and the server name from their files and variables', () => {
    const built = options({
      TEMPORAL_TLS_CA_PATH: '/certs/ca.pem',
      TEMPORAL_TLS_CERT_PATH: '/certs/client.pem',
      TEMPORAL_TLS_KEY_PATH: '/certs/client.key',
      TEMPORAL_TLS_SERVER_NAME: 'temporal.example',
    });
    const tls = built.tls as Exclude<typeof built.tls, false>;
    expect(text(tls.serverRootCACertificate)).to.equal('contents of /certs/ca.pem');
    expect(text(tls.clientCertPair?.crt)).to.equal('contents of /certs/client.pem');
    expect(text(tls.clientCertPair?.key)).to.equal('contents of /certs/client.key');
    expect(tls.serverNameOverride).to.equal('temporal.example');
    expect(built.apiKey).to.equal(undefined);
  });

  it('an API key (Temporal Cloud) turns TLS on unless TEMPORAL_TLS=false says otherwise', () => {
    const cloud = options({ TEMPORAL_ADDRESS: 'ns.acct.tmprl.cloud:7233', TEMPORAL_API_KEY: 'secret-key' });
    expect(cloud).to.deep.equal({ address: 'ns.acct.tmprl.cloud:7233', tls: {}, apiKey: 'secret-key' });
    expect(options({ TEMPORAL_API_KEY: 'secret-key', TEMPORAL_TLS: 'false' }).tls).to.equal(false);
  });

  it('refuses half an mTLS pair, TLS files with TEMPORAL_TLS=false, and a file it cannot read', () => {
    expect(() => options({ TEMPORAL_TLS_CERT_PATH: '/certs/client.pem' })).to.throw(ConfigError, /go together/);
    expect(() => options({ TEMPORAL_TLS: 'false', TEMPORAL_TLS_CA_PATH: '/certs/ca.pem' })).to.throw(
      ConfigError,
      /contradicts/,
    );
    expect(() => temporalConnectionOptions(loadConfig({ TEMPORAL_TLS_CA_PATH: '/nonexistent/ca.pem' }))).to.throw(
      ConfigError,
      /TEMPORAL_TLS_CA_PATH/,
    );
  });

  it('caps the client’s reconnect backoff at TEMPORAL_RECONNECT_BACKOFF_MAX_MS (2 s unless set)', () => {
    expect(temporalChannelArgs(loadConfig({}))).to.deep.equal({
      'grpc.initial_reconnect_backoff_ms': 1000,
      'grpc.max_reconnect_backoff_ms': 2000,
    });
    expect(temporalChannelArgs(loadConfig({ TEMPORAL_RECONNECT_BACKOFF_MAX_MS: '5000' }))).to.deep.equal({
      'grpc.initial_reconnect_backoff_ms': 1000,
      'grpc.max_reconnect_backoff_ms': 5000,
    });
    // A cap below gRPC's first wait shortens that wait too (gRPC would otherwise start above its cap).
    expect(temporalChannelArgs(loadConfig({ TEMPORAL_RECONNECT_BACKOFF_MAX_MS: '500' }))).to.deep.equal({
      'grpc.initial_reconnect_backoff_ms': 500,
      'grpc.max_reconnect_backoff_ms': 500,
    });
    expect(() => loadConfig({ TEMPORAL_RECONNECT_BACKOFF_MAX_MS: '0' })).to.throw(ConfigError);
  });
});
