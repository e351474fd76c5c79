/** Node's rawHeaders (name, value, name, value …) as [name, value] pairs, in order and case received. */
export const pairsOf = (raw: readonly string[]): [string, string][] => {
  const pairs: [string, string][] = [];
  for (let at = 0; at + 1 < raw.length; at += 2) pairs.push([raw[at]!, raw[at + 1]!]);
  return pairs;
};

/**
 * Header names lower-cased, repeated headers joined with ", " (as HTTP allows). A record without a
 * prototype: a sender's `constructor` or `__proto__` header is a header like any other, never
 * something inherited (which a filter would read, and which would join into the value).
 */
export const headerRecord = (pairs: readonly [string, string][]): Record<string, string> => {
  const record: Record<string, string> = Object.create(null);
  for (const [name, value] of pairs) {
    const key = name.toLowerCase();
    record[key] = Object.hasOwn(record, key) ? `${record[key]}, ${value}` : value;
  }
  return record;
};
