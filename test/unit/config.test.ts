import { randomBytes } from 'node:crypto';
import { expect } from 'chai';
import { ConfigError, loadConfig, withTestDatabase } from '../../src/platform/config';

describe('configuration', () => {
  it('has defaults that work on a development machine', () => {
    const config = loadConfig({});
    expect(config.PORT).to.equal(8080);
    expect(config.TEMPORAL_ADDRESS).to.equal('127.0.0.1:7233');
    expect(config.TEMPORAL_NAMESPACE).to.equal('default');
    expect(config.DATABASE_URL).to.equal('postgres://weft_app@127.0.0.1:5432/weft');
    expect(config.OPENAI_API_KEY).to.equal(undefined);
  });

  it('rejects invalid values with the variable named', () => {
    expect(() => loadConfig({ PORT: 'eighty' })).to.throw(ConfigError, /PORT/);
    expect(() => loadConfig({ DATABASE_URL: 'not a url' })).to.throw(ConfigError, /DATABASE_URL/);
    expect(() => loadConfig({ JWT_SECRET: 'short' })).to.throw(ConfigError, /JWT_SECRET/);
  });

  it('treats an empty variable as unset', () => {
    const config = loadConfig({ OPENAI_BASE_URL: '', OPENAI_API_KEY: '', PORT: '' });
    expect(config.OPENAI_BASE_URL).to.equal(undefined);
    expect(config.OPENAI_API_KEY).to.equal(undefined);
    expect(config.PORT).to.equal(8080);
  });

  describe('secrets in production', () => {
    const jwtSecret = randomBytes(32).toString('base64');
    const encryptionKey = randomBytes(32).toString('base64');
    const metricsToken = randomBytes(24).toString('base64');
    const production = (env: NodeJS.ProcessEnv) =>
      loadConfig({
        NODE_ENV: 'production',
        JWT_SECRET: jwtSecret,
        WEFT_ENCRYPTION_KEY: encryptionKey,
        METRICS_TOKEN: metricsToken,
        PUBLIC_URL: 'https://weft.example.com',
        ...env,
      });

    it('accepts random secrets: a JWT secret and a separate 32-byte encryption key (base64 or hex)', () => {
      const config = production({});
      expect(config.WEFT_ENCRYPTION_KEY).to.deep.equal(Buffer.from(encryptionKey, 'base64'));
      const hex = randomBytes(32).toString('hex');
      expect(production({ WEFT_ENCRYPTION_KEY: hex }).WEFT_ENCRYPTION_KEY).to.deep.equal(Buffer.from(hex, 'hex'));
      expect(production({ JWT_SECRET: randomBytes(48).toString('hex') }).NODE_ENV).to.equal('production');
    });

    it('refuses the development JWT secret and a missing one', () => {
      expect(() => production({ JWT_SECRET: undefined })).to.throw(ConfigError, /JWT_SECRET must be set/);
    });

    it('refuses placeholders, whatever their length', () => {
      for (const placeholder of [
        'change-me-change-me-change-me-change-me',
        'CHANGEME-CHANGEME-CHANGEME-CHANGEME-42',
        `replace-me-${randomBytes(24).toString('hex')}`,
        `secret${randomBytes(24).toString('hex')}`,
      ]) {
        expect(() => production({ JWT_SECRET: placeholder }), placeholder).to.throw(ConfigError, /placeholder/);
      }
    });

    it('refuses low-entropy secrets', () => {
      for (const weak of ['x'.repeat(40), 'abababababababababababababababab', '0123456789012345678901234567890123']) {
        expect(() => production({ JWT_SECRET: weak }), weak).to.throw(ConfigError, /JWT_SECRET has too little entropy/);
      }
      // Review L-7: sequences and repeated patterns have many distinct symbols but few bits.
      const counting = Buffer.from(Array.from({ length: 32 }, (_, at) => at)).toString('hex');
      const unit = randomBytes(8).toString('base64url');
      for (const patterned of [
        'abcdefghijklmnopqrstuvwxyzABCDEF',
        counting,
        unit.repeat(4),
        'acegikmoqsuwy'.repeat(3),
      ]) {
        expect(() => production({ JWT_SECRET: patterned }), patterned).to.throw(
          ConfigError,
          /JWT_SECRET (has too little|is a seq)/,
        );
      }
      expect(() => production({ WEFT_ENCRYPTION_KEY: counting }), counting).to.throw(
        ConfigError,
        /WEFT_ENCRYPTION_KEY/,
      );
      expect(() => production({ WEFT_ENCRYPTION_KEY: Buffer.alloc(32, 7).toString('base64') })).to.throw(
        ConfigError,
        /WEFT_ENCRYPTION_KEY has too little entropy/,
      );
    });

    it('requires WEFT_ENCRYPTION_KEY: 32 or more bytes, and not the JWT secret', () => {
      expect(() => production({ WEFT_ENCRYPTION_KEY: undefined })).to.throw(
        ConfigError,
        /WEFT_ENCRYPTION_KEY must be set/,
      );
      expect(() => production({ WEFT_ENCRYPTION_KEY: randomBytes(16).toString('hex') })).to.throw(
        ConfigError,
        /WEFT_ENCRYPTION_KEY: must be 32 or more bytes/,
      );
      expect(() => production({ WEFT_ENCRYPTION_KEY: 'not base64 at all!' })).to.throw(ConfigError, /32 or more bytes/);
      expect(() => production({ WEFT_ENCRYPTION_KEY: jwtSecret })).to.throw(ConfigError, /a secret of its own/);
    });

    it('keeps /metrics private: METRICS_TOKEN is required unless METRICS_PUBLIC=true says so (review NM-6)', () => {
      expect(production({}).METRICS_TOKEN).to.equal(metricsToken);
      expect(() => production({ METRICS_TOKEN: undefined })).to.throw(ConfigError, /METRICS_TOKEN must be set/);
      // docker compose passes an unset variable as ''.
      expect(() => production({ METRICS_TOKEN: '' })).to.throw(ConfigError, /METRICS_TOKEN must be set/);
      expect(() => production({ METRICS_TOKEN: undefined, METRICS_PUBLIC: 'false' })).to.throw(ConfigError);
      const open = production({ METRICS_TOKEN: undefined, METRICS_PUBLIC: 'true' });
      expect(open).to.deep.include({ METRICS_PUBLIC: true, METRICS_TOKEN: undefined });
      // A token is a secret like the others: no placeholder, no guessable one.
      expect(() => production({ METRICS_TOKEN: 'change-me-metrics-token' })).to.throw(ConfigError, /METRICS_TOKEN is/);
      expect(() => production({ METRICS_TOKEN: 'a'.repeat(32) })).to.throw(ConfigError, /METRICS_TOKEN has too/);
      // Outside production it stays optional (the port is the developer's own).
      expect(loadConfig({}).METRICS_TOKEN).to.equal(undefined);
      expect(loadConfig({}).METRICS_PUBLIC).to.equal(false);
    });

    it('refuses to start without PUBLIC_URL, which OAuth’s metadata names instead of any Host (review NL-3)', () => {
      expect(() => production({ PUBLIC_URL: undefined })).to.throw(ConfigError, /PUBLIC_URL must be set in production/);
      expect(() => production({ PUBLIC_URL: '' })).to.throw(ConfigError, /PUBLIC_URL must be set in production/);
      expect(() => production({ PUBLIC_URL: 'weft.example.com' })).to.throw(ConfigError, /PUBLIC_URL/);
      expect(production({}).PUBLIC_URL).to.equal('https://weft.example.com');
      // Development and the test suite keep working without it.
      expect(loadConfig({}).PUBLIC_URL).to.equal(undefined);
    });

    it('reports every problem at once', () => {
      expect(() => loadConfig({ NODE_ENV: 'production' })).to.throw(
        ConfigError,
        /JWT_SECRET must be set[\s\S]*METRICS_TOKEN must be set[\s\S]*WEFT_ENCRYPTION_KEY must be set/,
      );
    });
  });

  it('derives a stable encryption key outside production, different for another JWT secret', () => {
    const key = loadConfig({}).WEFT_ENCRYPTION_KEY;
    expect(key).to.have.length(32);
    expect(loadConfig({ NODE_ENV: 'test' }).WEFT_ENCRYPTION_KEY).to.deep.equal(key);
    expect(loadConfig({ JWT_SECRET: 'y'.repeat(40) }).WEFT_ENCRYPTION_KEY).not.to.deep.equal(key);
  });

  it('has database pools, timeouts and rate limits with documented defaults', () => {
    expect(loadConfig({})).to.deep.include({
      DATABASE_POOL_SIZE: 10,
      DATABASE_WORKER_POOL_SIZE: 10,
      DATABASE_STATEMENT_TIMEOUT_MS: 30_000,
      DATABASE_WORKER_STATEMENT_TIMEOUT_MS: 300_000,
      DATABASE_IDLE_IN_TRANSACTION_TIMEOUT_MS: 60_000,
      DATABASE_ACQUIRE_TIMEOUT_MS: 5_000,
      RATE_LIMIT_RPS: 100,
      RATE_LIMIT_BURST: 500,
      RATE_LIMIT_AUTH_FAILURES: 60,
    });
    expect(() => loadConfig({ RATE_LIMIT_RPS: '-1' })).to.throw(ConfigError, /RATE_LIMIT_RPS/);
    expect(() => loadConfig({ DATABASE_STATEMENT_TIMEOUT_MS: '0' })).to.throw(ConfigError, /STATEMENT_TIMEOUT/);
  });

  it('bounds how long an open stream goes without re-checking its credential, and how long it lives (issue 39)', () => {
    expect(loadConfig({})).to.deep.include({ STREAM_CREDENTIAL_RECHECK_MS: 30_000, STREAM_MAX_LIFETIME_MS: 3_600_000 });
    expect(loadConfig({ STREAM_CREDENTIAL_RECHECK_MS: '200' }).STREAM_CREDENTIAL_RECHECK_MS).to.equal(200);
    // "At least every 30 s" is the rule: a longer interval is refused, not honoured.
    expect(() => loadConfig({ STREAM_CREDENTIAL_RECHECK_MS: '60000' })).to.throw(ConfigError, /STREAM_CREDENTIAL/);
    expect(() => loadConfig({ STREAM_MAX_LIFETIME_MS: '0' })).to.throw(ConfigError, /STREAM_MAX_LIFETIME_MS/);
  });

  it('takes MCP_ALLOWED_ORIGINS as a comma-separated list of origins, empty by default', () => {
    expect(loadConfig({}).MCP_ALLOWED_ORIGINS).to.deep.equal([]);
    expect(
      loadConfig({ MCP_ALLOWED_ORIGINS: 'http://localhost:6274, https://app.example.com' }).MCP_ALLOWED_ORIGINS,
    ).to.deep.equal(['http://localhost:6274', 'https://app.example.com']);
    for (const bad of ['localhost:6274', 'https://app.example.com/path', 'https://app.example.com/']) {
      expect(() => loadConfig({ MCP_ALLOWED_ORIGINS: bad }), bad).to.throw(ConfigError, /MCP_ALLOWED_ORIGINS/);
    }
  });

  it('points the test suite at its own database', () => {
    const env = withTestDatabase({ DATABASE_URL: 'postgres://app@db:5432/weft' });
    expect(env.DATABASE_URL).to.equal('postgres://app@db:5432/weft_test');
    expect(withTestDatabase(env).DATABASE_URL).to.equal('postgres://app@db:5432/weft_test');
  });
});
