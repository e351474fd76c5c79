import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { expect } from 'chai';
import { addressPolicy, addressRefusal, guardedLookup } from '../../src/run-callbacks/address-guard';
import { createCallbackSender } from '../../src/run-callbacks/sender';

// Issue 26 part 2: the SSRF guard of outbound callbacks, and the sender's limits, against a real socket.

const strict = addressPolicy(false, '');

describe('run callbacks: the address guard', () => {
  it('refuses private, loopback, link-local and reserved addresses, IPv4 and IPv6, mapped ones too', () => {
    for (const address of [
      '127.0.0.1',
      '127.8.9.10',
      '10.0.0.1',
      '172.16.5.4',
      '172.31.255.255',
      '192.168.1.1',
      '169.254.169.254',
      '100.64.0.1',
      '0.0.0.0',
      '224.0.0.1',
      '255.255.255.255',
      '::1',
      '::',
      'fe80::1',
      'fc00::1',
      'fd12:3456::1',
      'ff02::1',
      '::ffff:127.0.0.1',
      '::ffff:7f00:1',
      '::ffff:10.0.0.1',
      '::ffff:a9fe:a9fe',
      '64:ff9b::a00:1',
    ]) {
      expect(addressRefusal(address, strict), address).to.be.a('string');
    }
  });

  it('lets public addresses through', () => {
    for (const address of ['93.184.215.14', '8.8.8.8', '172.32.0.1', '2606:4700::1111', '::ffff:8.8.8.8']) {
      expect(addressRefusal(address, strict), address).to.equal(null);
    }
  });

  it('allows everything with RUN_CALLBACK_ALLOW_PRIVATE, or just the ranges of RUN_CALLBACK_ALLOWED_CIDRS', () => {
    expect(addressRefusal('127.0.0.1', addressPolicy(true, ''))).to.equal(null);
    const ranges = addressPolicy(false, '10.1.0.0/16, fd00::/8');
    expect(addressRefusal('10.1.2.3', ranges)).to.equal(null);
    expect(addressRefusal('fd00::5', ranges)).to.equal(null);
    expect(addressRefusal('10.2.0.1', ranges)).to.be.a('string');
    expect(addressRefusal('::ffff:10.1.0.9', ranges)).to.equal(null);
    expect(() => addressPolicy(false, '10.0.0.0/33')).to.throw(/not a CIDR/);
    expect(() => addressPolicy(false, 'example.com/8')).to.throw(/not a CIDR/);
  });

  it('refuses a name at lookup when any address it resolves to is refused', async () => {
    const lookup = guardedLookup(strict);
    const error = await new Promise<Error | null>((resolve) => lookup('localhost', {}, (err) => resolve(err)));
    expect(error?.message).to.match(/localhost resolves to .*(loopback|private)/);
    const allowed = await new Promise<unknown>((resolve) =>
      guardedLookup(addressPolicy(true, ''))('localhost', { all: true }, (err, addresses) => resolve(err ?? addresses)),
    );
    expect(allowed).to.be.an('array').that.is.not.empty;
  });
});

describe('run callbacks: the sender', () => {
  const serve = async (handler: Parameters<typeof createServer>[1]) => {
    const server = createServer(handler).listen(0, '127.0.0.1');
    await new Promise<void>((resolve) => server.once('listening', () => resolve()));
    return {
      url: `http://127.0.0.1:${(server.address() as AddressInfo).port}/`,
      close: () => {
        server.closeAllConnections();
        server.close();
      },
    };
  };
  const open = addressPolicy(true, '');

  it('reads at most the response limit and keeps its first bytes', async () => {
    const server = await serve((_req, res) => {
      res.writeHead(500);
      res.end('x'.repeat(200_000));
    });
    try {
      const send = createCallbackSender(open, {
        timeoutMs: 2000,
        responseBodyBytes: 1024,
        storedBodyBytes: 16,
      } as never);
      const result = await send(server.url, '{}', {});
      expect(result).to.include({ outcome: 'failed', responseCode: 500, responseBody: 'x'.repeat(16) });
    } finally {
      server.close();
    }
  });

  it('gives up after its timeout', async () => {
    const server = await serve(() => {
      // Never answers.
    });
    try {
      const send = createCallbackSender(open, {
        timeoutMs: 300,
        responseBodyBytes: 1024,
        storedBodyBytes: 16,
      } as never);
      const result = await send(server.url, '{}', {});
      expect(result.outcome).to.equal('failed');
      expect(result.error).to.match(/within 300 ms/);
      expect(result.latencyMs).to.be.within(250, 2000);
    } finally {
      server.close();
    }
  });

  it('refuses an IP literal without connecting, and a name at connect time', async () => {
    const send = createCallbackSender(strict);
    expect(await send('http://127.0.0.1:9/', '{}', {})).to.include({ outcome: 'refused', responseCode: null });
    expect(await send('http://[::ffff:127.0.0.1]:9/', '{}', {})).to.include({ outcome: 'refused' });
    const named = await send('http://localhost:9/', '{}', {});
    expect(named.outcome).to.equal('refused');
    expect(named.error).to.match(/resolves to/);
  });
});
