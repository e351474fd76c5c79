import { expect } from 'chai';
import { createComponentsCache } from '../../src/graph/components-cache';

describe('graph_stats components cache (unit)', () => {
  const make = (clock: { now: number }, maxEntries = 10) =>
    createComponentsCache({ ttlMs: 60_000, maxEntries, now: () => clock.now });
  const counting = () => {
    const counter = { calls: 0 };
    const compute = async () => {
      counter.calls += 1;
      return { components: counter.calls, largest: 1 };
    };
    return { counter, compute };
  };

  it('computes once per workspace while the fingerprint holds and the result is younger than the TTL', async () => {
    const clock = { now: 1_000 };
    const cache = make(clock);
    const { counter, compute } = counting();
    const first = await cache.get('w', '3:2:0', compute);
    clock.now += 59_999;
    const second = await cache.get('w', '3:2:0', compute);
    expect(counter.calls).to.equal(1);
    expect(second).to.deep.equal(first);
    expect(first.computedAt.getTime()).to.equal(1_000);
    clock.now += 1;
    expect((await cache.get('w', '3:2:0', compute)).components).to.equal(2);
  });

  it('computes again when the fingerprint changes, and keeps workspaces apart', async () => {
    const cache = make({ now: 0 });
    const { counter, compute } = counting();
    await cache.get('w', '3:2:0', compute);
    await cache.get('w', '3:3:0', compute);
    await cache.get('v', '3:3:0', compute);
    expect(counter.calls).to.equal(3);
  });

  it('shares one computation between concurrent callers and forgets a failed one', async () => {
    const cache = make({ now: 0 });
    const { counter, compute } = counting();
    const [a, b] = await Promise.all([cache.get('w', 'f', compute), cache.get('w', 'f', compute)]);
    expect(counter.calls).to.equal(1);
    expect(a).to.equal(b);
    const failing = async () => {
      throw new Error('boom');
    };
    let failed = false;
    await cache.get('x', 'f', failing).catch(() => {
      failed = true;
    });
    expect(failed).to.equal(true);
    expect((await cache.get('x', 'f', compute)).components).to.equal(2);
  });

  it('holds at most maxEntries workspaces, dropping the oldest', async () => {
    const cache = make({ now: 0 }, 2);
    const { counter, compute } = counting();
    for (const workspace of ['a', 'b', 'c']) await cache.get(workspace, 'f', compute);
    await cache.get('c', 'f', compute);
    await cache.get('a', 'f', compute);
    expect(counter.calls).to.equal(4);
  });
});
