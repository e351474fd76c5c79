import { ValidationFailedError } from '../errors';

/**
 * The opaque cursor of a newest-first list keyset-paged on (created_at, id). `createdAt` is the
 * column as Postgres prints it (`created_at::text`), which keeps the microseconds a JS Date drops.
 */
export const encodeKeysetCursor = (createdAt: string, id: string) =>
  Buffer.from(`${createdAt}|${id}`).toString('base64url');

/** A cursor this list did not make is a 422 on `query.cursor`, never a 500. */
export function decodeKeysetCursor(cursor: string): { createdAt: string; id: string } {
  const [createdAt, id] = Buffer.from(cursor, 'base64url').toString('utf8').split('|');
  if (!createdAt || !id || !/^[0-9a-f-]{36}$/.test(id) || Number.isNaN(Date.parse(createdAt))) {
    throw new ValidationFailedError([
      { loc: ['query', 'cursor'], msg: 'Not a cursor of this list', type: 'value_error' },
    ]);
  }
  return { createdAt, id };
}
