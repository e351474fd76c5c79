import type { Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import type Koa from 'koa';
import type { DevServer } from '../../src/platform/temporal/dev-server';
import { freePort, startDevServer } from '../../src/platform/temporal/dev-server';

/**
 * A Temporal dev server of the bench's own, on a free loopback port, with the dispatch settings
 * `npm start` uses; `env.TEMPORAL_ADDRESS` points at it. Never the default port: an operator's
 * `npm start` (and its UI) may own it, and its load would fall on the figures.
 */
export async function privateTemporal(env: NodeJS.ProcessEnv): Promise<DevServer> {
  env.TEMPORAL_ADDRESS = `127.0.0.1:${await freePort()}`;
  return startDevServer({ address: env.TEMPORAL_ADDRESS });
}

/** Serves `app` on a free loopback port: the server (to close) and its base URL. */
export async function serveLocally(app: Koa): Promise<{ server: Server; url: string }> {
  const server = app.listen(0, '127.0.0.1');
  await new Promise<void>((resolve) => server.once('listening', () => resolve()));
  return { server, url: `http://127.0.0.1:${(server.address() as AddressInfo).port}` };
}
