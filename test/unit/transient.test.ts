import { Connection, Client as TemporalClient } from '@temporalio/client';
import { expect } from 'chai';
import pg from 'pg';
import { ConflictError, UnavailableError } from '../../src/platform/errors';
import { UpstreamError } from '../../src/platform/llm/errors';
import { freePort } from '../../src/platform/temporal/dev-server';
import { isTransient, transientKind } from '../../src/platform/transient';

/** A pg error as the driver raises it: a message and a SQLSTATE `code`. */
const pgError = (code: string, message = 'x') => Object.assign(new Error(message), { code });

describe('transient failures (issue 24): one classifier', () => {
  it('a real refused Postgres connection is the database being unavailable', async () => {
    const client = new pg.Client({ host: '127.0.0.1', port: await freePort(), user: 'nobody' });
    const error = await client.connect().then(
      () => undefined,
      (failure: unknown) => failure,
    );
    expect(transientKind(error)).to.equal('database');
  });

  it('a real unreachable Temporal frontend is Temporal being unavailable', async function () {
    this.timeout(20_000);
    const connection = Connection.lazy({ address: `127.0.0.1:${await freePort()}`, interceptors: [] });
    try {
      const error = await new TemporalClient({ connection }).workflow
        .start('nothing', { taskQueue: 'q', workflowId: 'w', args: [] })
        .then(
          () => undefined,
          (failure: unknown) => failure,
        );
      expect(transientKind(error)).to.equal('temporal');
    } finally {
      await connection.close();
    }
  });

  it('server states are transient: shutdown, connection exceptions, too many connections, lost races', () => {
    for (const code of ['57P01', '57P03', '08006', '53300', '40001', '40P01', '55P03']) {
      expect(transientKind(pgError(code)), code).to.equal('database');
    }
    expect(transientKind(new Error('Connection terminated unexpectedly'))).to.equal('database');
    expect(transientKind(new Error('timeout exceeded when trying to connect'))).to.equal('database');
    // Wrapped (TypeORM's driverError, a cause) and aggregated (Node's happy-eyeballs connect) errors.
    expect(isTransient(Object.assign(new Error('query failed'), { driverError: pgError('57P01') }))).to.equal(true);
    expect(isTransient(new AggregateError([pgError('ECONNREFUSED')], 'connect'))).to.equal(true);
  });

  it('what is about the request is not: constraint and data errors, domain errors, plain bugs', () => {
    for (const code of ['23505', '22P02', '42P01']) expect(isTransient(pgError(code)), code).to.equal(false);
    expect(isTransient(new TypeError('x is undefined'))).to.equal(false);
    expect(isTransient(new ConflictError({ error: 'idempotency_key_in_use' }))).to.equal(false);
    expect(isTransient(new UnavailableError('busy'))).to.equal(false);
    // A provider that is down is a 502 of the provider's, never mistaken for our own outage.
    const providerDown = new UpstreamError('openai', 'connection', undefined, { cause: pgError('ECONNREFUSED') });
    expect(isTransient(providerDown)).to.equal(false);
  });
});
