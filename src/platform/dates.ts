/**
 * The one date formatter of API responses: ISO 8601 in UTC. A string (a timestamp a raw query read
 * as text) is parsed first; null stays null, for optional timestamps.
 */
export function iso(value: Date | string): string;
export function iso(value: Date | string | null): string | null;
export function iso(value: Date | string | null): string | null {
  if (value === null) return null;
  return (value instanceof Date ? value : new Date(value)).toISOString();
}
