import { createHash } from 'node:crypto';

/**
 * A UUIDv5 (RFC 9562 §5.5): the SHA-1 of `namespace` (a uuid) and `name`, so one name always gives
 * one id. How a retried call finds the work its first attempt started (a prompt, a step's correlation).
 */
export function uuidV5(namespace: string, name: string): string {
  const hash = createHash('sha1')
    .update(Buffer.from(namespace.replaceAll('-', ''), 'hex'))
    .update(name, 'utf8')
    .digest();
  hash[6] = (hash[6]! & 0x0f) | 0x50;
  hash[8] = (hash[8]! & 0x3f) | 0x80;
  const hex = hash.subarray(0, 16).toString('hex');
  return `${hex.slice(0, 8)}-${hex.slice(8, 12)}-${hex.slice(12, 16)}-${hex.slice(16, 20)}-${hex.slice(20)}`;
}
