export interface Components {
  components: number;
  largest: number;
}

export interface ComponentsSnapshot extends Components {
  computedAt: Date;
}

interface Entry {
  fingerprint: string;
  snapshot: Promise<ComponentsSnapshot>;
  /** Set once the computation has finished (ms since the epoch). */
  computedAt?: number;
}

/**
 * Connected components per workspace, memoised in process. Computing them reads every edge
 * several times (1.65 s per request at 200k edges), so graph_stats reuses a result for `ttlMs`
 * as long as the graph's `fingerprint` (its live totals) has not changed, and concurrent requests
 * for one workspace share one computation. The response says how old the result is. Bounded:
 * past `maxEntries` workspaces the least recently computed one is dropped.
 */
export function createComponentsCache(options: { ttlMs: number; maxEntries: number; now?: () => number }) {
  const now = options.now ?? Date.now;
  const entries = new Map<string, Entry>();

  const isFresh = (entry: Entry | undefined, fingerprint: string): entry is Entry =>
    entry !== undefined &&
    entry.fingerprint === fingerprint &&
    (entry.computedAt === undefined || now() - entry.computedAt < options.ttlMs);

  return {
    get(workspaceId: string, fingerprint: string, compute: () => Promise<Components>): Promise<ComponentsSnapshot> {
      const cached = entries.get(workspaceId);
      if (isFresh(cached, fingerprint)) return cached.snapshot;
      const entry: Entry = {
        fingerprint,
        snapshot: compute().then(
          (result) => {
            entry.computedAt = now();
            return { ...result, computedAt: new Date(entry.computedAt) };
          },
          (error: unknown) => {
            // A failed computation is not remembered.
            if (entries.get(workspaceId) === entry) entries.delete(workspaceId);
            throw error;
          },
        ),
      };
      entries.delete(workspaceId);
      entries.set(workspaceId, entry);
      if (entries.size > options.maxEntries) {
        const oldest = entries.keys().next().value;
        if (oldest !== undefined) entries.delete(oldest);
      }
      return entry.snapshot;
    },
  };
}

export type ComponentsCache = ReturnType<typeof createComponentsCache>;
