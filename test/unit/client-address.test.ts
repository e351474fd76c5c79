import type { AddressInfo } from 'node:net';
import { expect } from 'chai';
import Koa from 'koa';
import { trustProxies } from '../../src/platform/api/client-address';

/** The address each limit counts by, as a real server sees a request with these X-Forwarded-For entries. */
async function addressSeen(hops: number, forwardedFor?: string): Promise<string> {
  const app = new Koa();
  trustProxies(app, hops);
  app.use((ctx) => {
    ctx.body = ctx.ip;
  });
  const server = app.listen(0, '127.0.0.1');
  await new Promise((resolve) => server.once('listening', resolve));
  try {
    const { port } = server.address() as AddressInfo;
    const headers: Record<string, string> = forwardedFor ? { 'x-forwarded-for': forwardedFor } : {};
    return await (await fetch(`http://127.0.0.1:${port}/`, { headers })).text();
  } finally {
    server.close();
  }
}

describe('the client address behind proxies (TRUST_PROXY_HOPS)', () => {
  it('exposed directly, counts the socket peer and ignores a forged X-Forwarded-For', async () => {
    expect(await addressSeen(0, '203.0.113.9')).to.match(/127\.0\.0\.1$/);
  });

  it('behind one proxy, counts the address that proxy appended, never entries a client wrote before it', async () => {
    expect(await addressSeen(1, '203.0.113.9')).to.equal('203.0.113.9');
    // A client that sends its own header: nginx appends the real peer after it.
    expect(await addressSeen(1, '198.51.100.1, 203.0.113.9')).to.equal('203.0.113.9');
  });
});
