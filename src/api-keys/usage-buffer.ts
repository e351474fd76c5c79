import type { UsageIncrement } from './repository';

/**
 * The key-usage counts not yet written, one entry per credential and UTC day, at most `maxKeys`
 * of them. A flush takes them all; the ones it could not write (Postgres down) are put back and
 * merged with what was counted meanwhile, so an outage delays counts instead of losing them. The
 * bound holds memory through a long outage: past it, a new credential-day's requests are dropped
 * (and counted as such) while the keys already held keep counting.
 */
export class UsageBuffer {
  private pending = new Map<string, UsageIncrement>();
  private droppedRequests = 0;

  constructor(private readonly maxKeys: number) {}

  get size(): number {
    return this.pending.size;
  }

  /** One request (or `entry.count` of them) with a credential; false when the bound refused it. */
  add(entry: UsageIncrement): boolean {
    const key = `${entry.credentialId}:${entry.day}`;
    const held = this.pending.get(key);
    if (held) {
      held.count += entry.count;
      if (entry.lastUsedAt > held.lastUsedAt) held.lastUsedAt = entry.lastUsedAt;
      return true;
    }
    if (this.pending.size >= this.maxKeys) {
      this.droppedRequests += entry.count;
      return false;
    }
    this.pending.set(key, { ...entry });
    return true;
  }

  /** Everything held, for a flush; the buffer is empty afterwards. */
  take(): UsageIncrement[] {
    const batch = [...this.pending.values()];
    this.pending = new Map();
    return batch;
  }

  /** Puts back what a failed flush took, merged with the counts recorded since. */
  restore(entries: readonly UsageIncrement[]): void {
    for (const entry of entries) this.add(entry);
  }

  /** Requests refused by the bound since the last call (the recorder logs them). */
  takeDropped(): number {
    const dropped = this.droppedRequests;
    this.droppedRequests = 0;
    return dropped;
  }
}
