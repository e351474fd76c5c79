import type { LookupAddress, LookupAllOptions, LookupOneOptions } from 'node:dns';
import { lookup as dnsLookup } from 'node:dns';
import { BlockList, isIP } from 'node:net';

/**
 * The SSRF guard of outbound callbacks: private, loopback, link-local, CGNAT, multicast and
 * reserved addresses (IPv4 and IPv6, IPv4-mapped IPv6 read as its IPv4) are refused unless the
 * operator allows them. It judges the RESOLVED address inside the socket's own `lookup`, so the
 * address checked is the address connected to: a name that resolves to a public address for a
 * check and to 127.0.0.1 for the connection (DNS rebinding) has no second resolution to win.
 * Ranges are Node's own `net.BlockList` (no dependency to keep current).
 */
const PRIVATE = new BlockList();
for (const [net, prefix] of [
  ['0.0.0.0', 8],
  ['10.0.0.0', 8],
  ['100.64.0.0', 10],
  ['127.0.0.0', 8],
  ['169.254.0.0', 16],
  ['172.16.0.0', 12],
  ['192.0.0.0', 24],
  ['192.0.2.0', 24],
  ['192.168.0.0', 16],
  ['198.18.0.0', 15],
  ['198.51.100.0', 24],
  ['203.0.113.0', 24],
  ['224.0.0.0', 4],
  ['240.0.0.0', 4],
] as const) {
  PRIVATE.addSubnet(net, prefix, 'ipv4');
}
for (const [net, prefix] of [
  ['::', 96], // unspecified, loopback and the deprecated IPv4-compatible block
  ['64:ff9b::', 96], // NAT64: reaches an IPv4 address through a translator
  ['100::', 64], // discard
  ['2001:db8::', 32], // documentation
  ['fc00::', 7], // unique local
  ['fe80::', 10], // link-local
  ['fec0::', 10], // old site-local
  ['ff00::', 8], // multicast
] as const) {
  PRIVATE.addSubnet(net, prefix, 'ipv6');
}

export interface AddressPolicy {
  /** RUN_CALLBACK_ALLOW_PRIVATE: nothing is refused. */
  allowPrivate: boolean;
  /** RUN_CALLBACK_ALLOWED_CIDRS: ranges allowed although private. */
  allowed: BlockList;
  /** Addresses refused whatever is allowed (connectors: the cloud metadata address). */
  never?: BlockList;
}

/** The cloud metadata address (AWS, GCP, Azure, …): connectors never reach it, whatever is allowed. */
export const METADATA_ADDRESSES = ['169.254.169.254', 'fd00:ec2::254'] as const;

/**
 * The policy of the configuration's two variables; a malformed CIDR is a configuration error.
 * `never` lists addresses refused even when allowed; `variable` names the setting in that error.
 */
export function addressPolicy(
  allowPrivate: boolean,
  cidrs: string,
  options: { never?: readonly string[]; variable?: string } = {},
): AddressPolicy {
  const never = new BlockList();
  for (const address of options.never ?? []) never.addAddress(address, isIP(address) === 6 ? 'ipv6' : 'ipv4');
  const allowed = new BlockList();
  for (const cidr of cidrs
    .split(',')
    .map((part) => part.trim())
    .filter(Boolean)) {
    const [address, bits] = cidr.split('/');
    const family = isIP(address ?? '');
    const prefix = Number(bits);
    if (!family || !Number.isInteger(prefix) || prefix < 0 || prefix > (family === 4 ? 32 : 128)) {
      throw new Error(`${options.variable ?? 'RUN_CALLBACK_ALLOWED_CIDRS'}: '${cidr}' is not a CIDR range`);
    }
    allowed.addSubnet(address!, prefix, family === 4 ? 'ipv4' : 'ipv6');
  }
  return { allowPrivate, allowed, ...(options.never?.length ? { never } : {}) };
}

/** An IPv4-mapped IPv6 address (`::ffff:127.0.0.1`, `::ffff:7f00:1`) as its IPv4; null for any other. */
function mappedIPv4(address: string): string | null {
  const canonical = new URL(`http://[${address}]`).hostname.slice(1, -1).toLowerCase();
  const match = /^::ffff:([0-9a-f]{1,4}):([0-9a-f]{1,4})$/.exec(canonical);
  if (!match) return null;
  const high = Number.parseInt(match[1]!, 16);
  const low = Number.parseInt(match[2]!, 16);
  return [high >> 8, high & 255, low >> 8, low & 255].join('.');
}

/** Why `address` (an IP literal) may not be called under `policy`, or null when it may. */
export function addressRefusal(address: string, policy: AddressPolicy): string | null {
  const family = isIP(address);
  if (family === 0) return policy.allowPrivate ? null : `${address} is not an IP address`;
  const v4 = family === 4 ? address : mappedIPv4(address);
  const [checked, type] = v4 ? [v4, 'ipv4' as const] : [address, 'ipv6' as const];
  if (policy.never?.check(checked, type)) return `${address} is never reachable (a cloud metadata address)`;
  if (policy.allowPrivate) return null;
  if (!PRIVATE.check(checked, type) || policy.allowed.check(checked, type)) return null;
  return `${address} is a private, loopback, link-local or reserved address`;
}

/** Thrown through the socket when the resolved address is refused; an attempt records it as `refused`. */
export class AddressRefusedError extends Error {
  readonly code = 'ERR_CALLBACK_ADDRESS_REFUSED';
}

type LookupCallback = (error: NodeJS.ErrnoException | null, address: string | LookupAddress[], family?: number) => void;

/**
 * A `lookup` for http(s) Agents: resolves as `dns.lookup` does, then refuses the connection when
 * ANY address the name resolves to is refused (so no address family or order can slip one in).
 */
export function guardedLookup(policy: AddressPolicy) {
  return (hostname: string, options: LookupOneOptions | LookupAllOptions, callback: LookupCallback): void => {
    dnsLookup(hostname, { ...options, all: true }, (error, addresses) => {
      if (error) return callback(error, []);
      const refusal = addresses.map((entry) => addressRefusal(entry.address, policy)).find(Boolean);
      if (refusal) return callback(new AddressRefusedError(`${hostname} resolves to ${refusal}`), []);
      if (options.all) return callback(null, addresses);
      const first = addresses[0];
      if (!first) return callback(Object.assign(new Error(`${hostname} has no address`), { code: 'ENOTFOUND' }), []);
      callback(null, first.address, first.family);
    });
  };
}
