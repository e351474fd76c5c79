/**
 * A small least-recently-used map: a Map keeps insertion order, so re-inserting on a hit moves the
 * entry to the end and the first key is always the eldest. For the intake's per-process caches,
 * whose keys carry everything that makes an entry current (so there is nothing to invalidate).
 */
export function createLru<K, V>(capacity: number) {
  const entries = new Map<K, V>();
  return {
    get(key: K): V | undefined {
      const value = entries.get(key);
      if (value === undefined) return undefined;
      entries.delete(key);
      entries.set(key, value);
      return value;
    },
    set(key: K, value: V): void {
      entries.delete(key);
      entries.set(key, value);
      if (entries.size > capacity) entries.delete(entries.keys().next().value as K);
    },
    get size() {
      return entries.size;
    },
  };
}
