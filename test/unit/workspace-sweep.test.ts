import { expect } from 'chai';
import type { SweepProgress } from '../../src/platform/workspace-sweep';
import { forEachWorkspace, onePage } from '../../src/platform/workspace-sweep';

/** A pg error as the driver raises it: a message and a SQLSTATE `code`. */
const pgError = (code: string) => Object.assign(new Error(code), { code });

/** Pages of `size` over `ids` in order, as `workspaceIdsAfter` answers them. */
const pages = (ids: string[], size: number) => async (after: string | null) =>
  ids.filter((id) => after === null || id > after).slice(0, size);

describe('forEachWorkspace: the one workspace sweep', () => {
  it('visits every page in order and beats after each workspace', async () => {
    const visited: string[] = [];
    const beats: SweepProgress[] = [];
    const result = await forEachWorkspace(
      { job: 'test', page: pages(['a', 'b', 'c', 'd', 'e'], 2), heartbeat: (p) => beats.push(p), warn: () => {} },
      async (id) => {
        visited.push(id);
      },
    );
    expect(visited).to.deep.equal(['a', 'b', 'c', 'd', 'e']);
    expect(result).to.deep.equal({ visited: 5, failed: 0, last: 'e' });
    expect(beats.at(-1)).to.deep.equal({ done: 5, failed: 0 });
  });

  it('one page only, from `after`: one batch of a longer pass', async () => {
    const result = await forEachWorkspace(
      { job: 'test', page: pages(['a', 'b', 'c', 'd'], 2), after: 'a', onePageOnly: true, warn: () => {} },
      async () => {},
    );
    expect(result).to.deep.equal({ visited: 2, failed: 0, last: 'c' });
    const none = await forEachWorkspace(
      { job: 'test', page: pages(['a'], 2), after: 'a', onePageOnly: true, warn: () => {} },
      async () => {},
    );
    expect(none).to.deep.equal({ visited: 0, failed: 0, last: null });
  });

  it('a fixed list is one page', async () => {
    let loads = 0;
    const page = onePage(async () => {
      loads += 1;
      return ['x', 'y'];
    });
    const result = await forEachWorkspace({ job: 'test', page, warn: () => {} }, async () => {});
    expect(result).to.deep.equal({ visited: 2, failed: 0, last: 'y' });
    expect(loads).to.equal(1);
  });

  it('logs, counts and skips a workspace whose work fails; the others still run', async () => {
    const visited: string[] = [];
    const warnings: Record<string, unknown>[] = [];
    const result = await forEachWorkspace(
      { job: 'test', page: pages(['a', 'b', 'c'], 10), warn: (fields) => warnings.push(fields) },
      async (id) => {
        if (id === 'a') throw new Error('bad settings');
        visited.push(id);
      },
    );
    expect(visited).to.deep.equal(['b', 'c']);
    expect(result).to.deep.equal({ visited: 3, failed: 1, last: 'c' });
    expect(warnings).to.have.length(1);
    expect(warnings[0]).to.include({ workspace_id: 'a' });
  });

  it('ends the sweep on a transient failure, so the activity is retried when the database is back', async () => {
    const visited: string[] = [];
    const sweep = forEachWorkspace({ job: 'test', page: pages(['a', 'b', 'c'], 10), warn: () => {} }, async (id) => {
      if (id === 'b') throw pgError('57P01');
      visited.push(id);
    });
    const failure = await sweep.then(
      () => undefined,
      (error: unknown) => error,
    );
    expect(failure).to.have.property('code', '57P01');
    expect(visited).to.deep.equal(['a']);
  });

  it('passes the work a report that beats with its progress and where the sweep stands', async () => {
    const beats: SweepProgress[] = [];
    await forEachWorkspace(
      { job: 'test', page: pages(['a'], 10), heartbeat: (p) => beats.push(p), warn: () => {} },
      async (_id, report) => report({ nodes: 10 }),
    );
    expect(beats).to.deep.equal([
      { workspace: 'a', done: 0, failed: 0, nodes: 10 },
      { done: 1, failed: 0 },
    ]);
  });
});
