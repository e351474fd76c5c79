import { expect } from 'chai';
import type { FilterRequest } from '../../src/filters/pool';
import { createFilterPool } from '../../src/filters/pool';

const request = (workspaceId: string, a: number): FilterRequest => ({
  headers: {},
  body: Buffer.from(JSON.stringify({ a })),
  contentType: 'application/json',
  trigger: { id: '', slug: '' },
  workspaceId,
});

// Issue 43 item 3 (review NM-8): the filter pool's workers are shared fairly between workspaces.
describe('filter pool: a fair queue per workspace', () => {
  it('a flooding workspace waits behind another’s next task (round-robin), beyond its share is busy', async () => {
    const pool = createFilterPool({ size: 1, timeoutMs: 2000, heapMb: 32, queue: 200, queuePerWorkspace: 3 });
    try {
      const order: string[] = [];
      const submit = (workspace: string, n: number) =>
        pool.evaluate('body.a', request(workspace, n)).then((outcome) => {
          order.push(`${workspace}${n}`);
          return outcome;
        });
      // A1 runs at once; A2–A4 wait (A's share is 3); A5 is refused; B1 waits in a queue of its own.
      const flood = [1, 2, 3, 4, 5].map((n) => submit('A', n));
      const theirs = submit('B', 1);
      const outcomes = await Promise.all([...flood, theirs]);
      expect(outcomes[4]).to.deep.equal({ result: 'error', error: 'filter_busy: too many filters waiting' });
      expect(outcomes.filter((outcome) => outcome.result === 'matched')).to.have.length(5);
      expect(order.filter((name) => name !== 'A5')).to.deep.equal(['A1', 'A2', 'B1', 'A3', 'A4']);
    } finally {
      await pool.close();
    }
  });

  it('a full queue refuses the workspaces already waiting, never one with nothing waiting', async () => {
    const pool = createFilterPool({ size: 1, timeoutMs: 2000, heapMb: 32, queue: 2, queuePerWorkspace: 50 });
    try {
      const outcomes = await Promise.all([
        ...[1, 2, 3, 4].map((n) => pool.evaluate('body.a', request('A', n))),
        pool.evaluate('body.a', request('B', 1)),
      ]);
      expect(outcomes.map((outcome) => outcome.result)).to.deep.equal([
        'matched',
        'matched',
        'matched',
        'error',
        'matched',
      ]);
    } finally {
      await pool.close();
    }
  });
});
