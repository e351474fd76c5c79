import { expect } from 'chai';
import type { UsageIncrement } from '../../src/api-keys/repository';
import { UsageBuffer } from '../../src/api-keys/usage-buffer';

const at = (iso: string) => new Date(iso);
const use = (credentialId: string, count: number, lastUsedAt = at('2026-11-29T03:00:00Z')): UsageIncrement => ({
  credentialId,
  workspaceId: 'w',
  userId: 'u',
  day: '2026-11-29',
  count,
  lastUsedAt,
});
const counts = (entries: UsageIncrement[]) => Object.fromEntries(entries.map((e) => [e.credentialId, e.count]));

describe('key usage buffer: counts kept across a failed flush (unit)', () => {
  it('a flush that failed puts its counts back, merged with the requests counted meanwhile', () => {
    const buffer = new UsageBuffer(10);
    buffer.add(use('a', 1));
    buffer.add(use('a', 1));
    buffer.add(use('b', 1));
    const failed = buffer.take();
    expect(buffer.size).to.equal(0);
    // Requests go on during the outage, one of them with a credential the failed flush held.
    buffer.add(use('a', 1, at('2026-11-29T03:05:00Z')));
    buffer.add(use('c', 1));
    buffer.restore(failed);
    const next = buffer.take();
    expect(counts(next)).to.deep.equal({ a: 3, b: 1, c: 1 });
    // The latest use survives the merge, whichever side held it.
    expect(next.find((e) => e.credentialId === 'a')?.lastUsedAt.toISOString()).to.equal('2026-11-29T03:05:00.000Z');
  });

  it('the same credential on another day is another entry', () => {
    const buffer = new UsageBuffer(10);
    buffer.add(use('a', 1));
    buffer.add({ ...use('a', 1), day: '2026-11-30' });
    expect(buffer.take()).to.have.length(2);
  });

  it('bounded: past maxKeys a new credential-day is refused and counted, held ones keep counting', () => {
    const buffer = new UsageBuffer(2);
    expect(buffer.add(use('a', 1))).to.equal(true);
    expect(buffer.add(use('b', 1))).to.equal(true);
    expect(buffer.add(use('c', 1))).to.equal(false);
    expect(buffer.add(use('a', 4))).to.equal(true);
    const failed = buffer.take();
    buffer.add(use('d', 1));
    buffer.restore(failed); // a fits back, b no longer does
    expect(buffer.size).to.equal(2);
    expect(counts(buffer.take())).to.deep.equal({ d: 1, a: 5 });
    expect(buffer.takeDropped()).to.equal(2); // c's request and b's
    expect(buffer.takeDropped()).to.equal(0);
  });
});
