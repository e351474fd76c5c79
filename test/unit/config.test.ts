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

  it('refuses the development JWT secret in production', () => {
    expect(() => loadConfig({ NODE_ENV: 'production' })).to.throw(ConfigError, /JWT_SECRET must be set/);
    const production = { NODE_ENV: 'production', JWT_SECRET: 'x'.repeat(40), WEFT_ENCRYPTION_KEY: 'y'.repeat(40) };
    expect(loadConfig(production).NODE_ENV).to.equal('production');
  });

  it('points the test suite at its own database', () => {
    const env = withTestDatabase({ DATABASE_URL: 'postgres://app@db:5432/weft' });
    expect(env.DATABASE_URL).to.equal('postgres://app@db:5432/weft_test');
    expect(withTestDatabase(env).DATABASE_URL).to.equal('postgres://app@db:5432/weft_test');
  });
});
