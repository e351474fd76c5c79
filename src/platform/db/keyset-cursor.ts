import { ValidationFailedError } from '../errors';

/**
 * The opaque cursor of a newest-first list keyset-paged on (created_at, id). `createdAt` is the
 * column as Postgres prints it (`created_at::text`), which keeps the microseconds a JS Date drops.
 */
export const encodeKeysetCursor = (createdAt: string, id: string) =>
  Buffer.from(`${createdAt}|${id}`).toString('base64url');

// Exactly what `created_at::text` prints (ISO DateStyle): `2026-11-23 11:30:00.123456+00`.
// Postgres reads an offset up to ±15:59:59 and refuses the rest ("time zone displacement out of range").
const PRINTED_TIMESTAMPTZ =
  /^(\d{4})-(\d{2})-(\d{2}) (\d{2}):(\d{2}):(\d{2})(\.\d{1,6})?[+-](?:0\d|1[0-5])(?::[0-5]\d){0,2}$/;
const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/;

/** True when Postgres will read `text` as a timestamptz: the printed shape, and a real calendar date and time. */
function isPrintedTimestamp(text: string): boolean {
  const parts = PRINTED_TIMESTAMPTZ.exec(text);
  if (!parts) return false;
  const [year, month, day, hour, minute, second] = parts.slice(1, 7).map(Number) as [number, ...number[]];
  const date = new Date(Date.UTC(year, month! - 1, day));
  return (
    date.getUTCFullYear() === year &&
    date.getUTCMonth() === month! - 1 &&
    date.getUTCDate() === day &&
    hour! < 24 &&
    minute! < 60 &&
    second! < 60
  );
}

/** A cursor this list did not make is a 422 on `query.cursor`, never a 500 from Postgres. */
export function decodeKeysetCursor(cursor: string): { createdAt: string; id: string } {
  const [createdAt, id, ...rest] = Buffer.from(cursor, 'base64url').toString('utf8').split('|');
  if (rest.length > 0 || !createdAt || !id || !UUID.test(id) || !isPrintedTimestamp(createdAt)) {
    throw new ValidationFailedError([
      { loc: ['query', 'cursor'], msg: 'Not a cursor of this list', type: 'value_error' },
    ]);
  }
  return { createdAt, id };
}
