// A UTC timestamp as Postgres writes it into JSON (`to_jsonb`, session time zone UTC) or as ISO with `Z`.
const UTC_TIMESTAMP = /^(\d{4}-\d{2}-\d{2})T(\d{2}:\d{2}:\d{2})(?:\.(\d{1,9}))?(?:\+00:00|Z)$/;

/**
 * The one date formatter of API responses: ISO 8601 in UTC. A string (a timestamp a raw query read
 * as text) is parsed first; null stays null, for optional timestamps. A UTC string is rewritten
 * without a Date: V8 parses Postgres's microseconds and `+00:00` ≈ 2 µs slower, paid per timestamp
 * of every row a read returns (the same result, milliseconds truncated as Date does).
 */
export function iso(value: Date | string): string;
export function iso(value: Date | string | null): string | null;
export function iso(value: Date | string | null): string | null {
  if (value === null) return null;
  if (value instanceof Date) return value.toISOString();
  const utc = UTC_TIMESTAMP.exec(value);
  if (utc) return `${utc[1]}T${utc[2]}.${`${utc[3] ?? ''}000`.slice(0, 3)}Z`;
  return new Date(value).toISOString();
}
