import type Koa from 'koa';

/**
 * Which address a request comes from (`ctx.ip`), for the limits that count per address: refused
 * credentials, OAuth registrations, webhook intake per source. Directly exposed (`hops` 0), it is the
 * socket's peer and `X-Forwarded-For` is ignored, since any client can write it. Behind `hops` proxies
 * that each append the address they saw (nginx's `$proxy_add_x_forwarded_for`), it is the entry the
 * outermost trusted proxy wrote: the last `hops` entries only, so a client's own forged entries in
 * front of them are never read. Without this, every client behind a load balancer shares its address,
 * and one client's failures lock everyone out.
 */
export function trustProxies(app: Koa, hops: number): void {
  app.proxy = hops > 0;
  app.maxIpsCount = hops;
}
