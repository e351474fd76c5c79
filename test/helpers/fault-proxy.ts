import { once } from 'node:events';
import type { AddressInfo, Server, Socket } from 'node:net';
import net from 'node:net';

/**
 * What the proxy does to traffic:
 * - `cut`: stops listening (new connections are refused) and closes every open one;
 * - `stall`: accepts connections but holds every byte, both ways, until healed (a partition);
 * - `reset`: answers every open and new connection with a TCP RST.
 */
export type Fault = 'cut' | 'stall' | 'reset';

/** A TCP proxy a test puts in front of Postgres or Temporal, to break the link without touching the service. */
export interface FaultProxy {
  /** `127.0.0.1:<port>`: where clients connect instead of the target. */
  address: string;
  port: number;
  /** Starts `fault` (ending any other) and leaves it in force until `heal`. */
  inject(fault: Fault): Promise<void>;
  /** Ends the fault: held bytes flow again, new connections are accepted. */
  heal(): Promise<void>;
  /** `fault` for `ms`, then healed. */
  outage(fault: Fault, ms: number): Promise<void>;
  /** Connections accepted so far, and those it broke (closed or reset). */
  stats(): { accepted: number; broken: number };
  close(): Promise<void>;
}

interface Link {
  client: Socket;
  upstream?: Socket;
}

/** Starts a proxy on a free port of 127.0.0.1 that forwards to `target` (`host:port`). */
export async function startFaultProxy(target: string): Promise<FaultProxy> {
  const [targetHost, targetPort] = splitAddress(target);
  const links = new Set<Link>();
  let current: Fault | undefined;
  let accepted = 0;
  let broken = 0;

  const drop = (link: Link, how: 'close' | 'reset') => {
    links.delete(link);
    broken++;
    if (how === 'reset') {
      link.client.resetAndDestroy();
      link.upstream?.resetAndDestroy();
    } else {
      link.client.destroy();
      link.upstream?.destroy();
    }
  };

  // Forwards one direction; a paused socket emits no data, so a stall holds bytes in the kernel.
  const forward = (from: Socket, to: Socket) => {
    from.on('data', (chunk) => {
      if (!to.write(chunk)) {
        from.pause();
        to.once('drain', () => {
          if (current !== 'stall') from.resume();
        });
      }
    });
    from.on('end', () => to.end());
  };

  const connectUpstream = (link: Link) => {
    const upstream = net.connect(targetPort, targetHost);
    link.upstream = upstream;
    forward(link.client, upstream);
    forward(upstream, link.client);
    const end = () => {
      if (!links.delete(link)) return;
      link.client.destroy();
      upstream.destroy();
    };
    upstream.on('error', end);
    upstream.on('close', end);
    link.client.on('error', end);
    link.client.on('close', end);
    link.client.resume();
  };

  const server: Server = net.createServer({ pauseOnConnect: true }, (client) => {
    accepted++;
    const link: Link = { client };
    links.add(link);
    client.on('error', () => undefined);
    if (current === 'reset' || current === 'cut') drop(link, current === 'reset' ? 'reset' : 'close');
    // A stalled connection is accepted, but reaches the target only once healed.
    else if (current !== 'stall') connectUpstream(link);
  });
  server.listen(0, '127.0.0.1');
  await once(server, 'listening');
  const port = (server.address() as AddressInfo).port;

  const heal = async () => {
    const was = current;
    current = undefined;
    if (was === 'cut') {
      server.listen(port, '127.0.0.1');
      await once(server, 'listening');
    }
    if (was === 'stall') {
      for (const link of links) {
        if (link.upstream) {
          link.client.resume();
          link.upstream.resume();
        } else connectUpstream(link);
      }
    }
  };

  const inject = async (fault: Fault) => {
    if (current) await heal();
    current = fault;
    if (fault === 'cut') {
      // Not awaiting close: it resolves only when every connection is gone, which the loop below does.
      server.close();
      for (const link of [...links]) drop(link, 'close');
    } else if (fault === 'reset') {
      for (const link of [...links]) drop(link, 'reset');
    } else {
      for (const link of links) {
        link.client.pause();
        link.upstream?.pause();
      }
    }
  };

  return {
    address: `127.0.0.1:${port}`,
    port,
    inject,
    heal,
    async outage(fault, ms) {
      await inject(fault);
      await new Promise((resolve) => setTimeout(resolve, ms));
      await heal();
    },
    stats: () => ({ accepted, broken }),
    async close() {
      current = 'cut';
      for (const link of [...links]) drop(link, 'close');
      if (server.listening) await new Promise((resolve) => server.close(resolve));
    },
  };
}

function splitAddress(address: string): [string, number] {
  const at = address.lastIndexOf(':');
  return [address.slice(0, at), Number(address.slice(at + 1))];
}

/** `url` (a postgres:// URL) with its host and port replaced by the proxy's. */
export function throughProxy(url: string, proxy: FaultProxy): string {
  const parsed = new URL(url);
  parsed.hostname = '127.0.0.1';
  parsed.port = String(proxy.port);
  return parsed.toString();
}
