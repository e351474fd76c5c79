import { once } from 'node:events';
import type { AddressInfo, Server, Socket } from 'node:net';
import net from 'node:net';
import { expect } from 'chai';
import type { FaultProxy } from '../helpers/fault-proxy';
import { startFaultProxy } from '../helpers/fault-proxy';

/** A connection through the proxy that records what it received and how it ended. */
async function connect(proxy: FaultProxy) {
  const socket: Socket = net.connect(proxy.port, '127.0.0.1');
  let received = '';
  let error: string | undefined;
  socket.on('data', (chunk) => {
    received += chunk.toString();
  });
  socket.on('error', (failure: NodeJS.ErrnoException) => {
    error = failure.code;
  });
  // Not events.once: it rejects on 'error', which these tests expect and read from `error()`.
  const closed = new Promise((resolve) => socket.once('close', resolve));
  await Promise.race([new Promise((resolve) => socket.once('connect', resolve)), closed]);
  return { socket, received: () => received, error: () => error, closed };
}

const within = async (ms: number, until: () => boolean) => {
  const deadline = Date.now() + ms;
  while (!until() && Date.now() < deadline) await new Promise((resolve) => setTimeout(resolve, 10));
  return until();
};

describe('fault proxy (test helper)', () => {
  let echo: Server;
  let proxy: FaultProxy;

  beforeEach(async () => {
    echo = net.createServer((socket) => {
      socket.on('error', () => undefined);
      socket.pipe(socket);
    });
    echo.listen(0, '127.0.0.1');
    await once(echo, 'listening');
    proxy = await startFaultProxy(`127.0.0.1:${(echo.address() as AddressInfo).port}`);
  });
  afterEach(async () => {
    await proxy.close();
    echo.close();
  });

  it('forwards both ways while healthy', async () => {
    const link = await connect(proxy);
    link.socket.write('ping');
    expect(await within(1000, () => link.received() === 'ping')).to.equal(true);
    link.socket.destroy();
  });

  it('cut: closes open connections and refuses new ones until healed', async () => {
    const open = await connect(proxy);
    await proxy.inject('cut');
    await open.closed;
    const refused = await connect(proxy);
    await refused.closed;
    expect(refused.error()).to.equal('ECONNREFUSED');
    await proxy.heal();
    const again = await connect(proxy);
    again.socket.write('back');
    expect(await within(1000, () => again.received() === 'back')).to.equal(true);
    again.socket.destroy();
  });

  it('stall: holds bytes of open and new connections, then delivers them once healed', async () => {
    const open = await connect(proxy);
    await proxy.inject('stall');
    open.socket.write('held');
    const fresh = await connect(proxy);
    fresh.socket.write('new');
    expect(await within(300, () => open.received() !== '' || fresh.received() !== '')).to.equal(false);
    await proxy.heal();
    expect(await within(1000, () => open.received() === 'held' && fresh.received() === 'new')).to.equal(true);
    open.socket.destroy();
    fresh.socket.destroy();
  });

  it('reset: open and new connections get ECONNRESET', async () => {
    const open = await connect(proxy);
    await proxy.inject('reset');
    await open.closed;
    expect(open.error()).to.equal('ECONNRESET');
    const fresh = await connect(proxy);
    fresh.socket.write('x');
    await fresh.closed;
    expect(fresh.error()).to.equal('ECONNRESET');
    expect(proxy.stats().broken).to.equal(2);
  });
});
