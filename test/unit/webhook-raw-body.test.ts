import type { IncomingMessage } from 'node:http';
import { PassThrough } from 'node:stream';
import { expect } from 'chai';
import { readRawBody } from '../../src/triggers/raw-body';

const asRequest = (stream: PassThrough) => Object.assign(stream, { headers: {} }) as unknown as IncomingMessage;

describe('readRawBody', () => {
  it('reads the bytes of a stream to its end', async () => {
    const stream = new PassThrough();
    stream.end('{"a":1}');
    expect((await readRawBody(asRequest(stream), 100))?.toString()).to.equal('{"a":1}');
  });

  it('rejects at once a stream that was already read to its end, instead of waiting for it', async () => {
    const stream = new PassThrough();
    stream.end('{}');
    stream.resume();
    await new Promise((resolve) => stream.on('end', resolve));
    const error = await readRawBody(asRequest(stream), 100).then(
      () => null,
      (caught: Error) => caught,
    );
    expect(error?.message).to.match(/already consumed/);
  });
});
