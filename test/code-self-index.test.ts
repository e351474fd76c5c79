import { execFile } from 'node:child_process';
import { mkdtemp } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { promisify } from 'node:util';
import { expect } from 'chai';
import { weftIndex } from './helpers/code-index';
import { as } from './helpers/http';
import { newTenant } from './helpers/tenants';

const run = promisify(execFile);
const ROOT = path.resolve(__dirname, '..');

/**
 * Weft indexes itself: a clone (with its history) of the repository this suite runs in, end to
 * end through the CLI and the API, then symbol-context of a function whose callers and commits
 * git and the source can tell independently.
 */
describe('code graph: indexing Weft’s own repository', function () {
  this.timeout(180_000);

  it('names a function’s real callers and the commits that touched its file', async () => {
    const clone = path.join(await mkdtemp(path.join(tmpdir(), 'weft-self-')), 'weft');
    await run('git', ['clone', '--quiet', ROOT, clone]);
    const tenant = await newTenant(20_000);
    const indexed = await weftIndex(clone, tenant.api_key, '--repo', 'weft');
    expect(indexed.code, indexed.stderr).to.equal(0);
    const summary = JSON.parse(indexed.stdout);
    expect(summary.files).to.be.greaterThan(200);
    expect(summary.symbols).to.be.greaterThan(1000);
    expect(summary.commits).to.be.greaterThan(50);
    // Nothing is left out but what the indexer's size limit leaves out: the generated API client (over 1 MiB).
    const generatedClient = { path: 'src/client/schema.ts', reason: 'larger than 1 MiB' };
    for (const skipped of summary.skipped) expect(skipped).to.deep.equal(generatedClient);

    // insertNode (src/graph/repository.ts) is called by createNodeInTransaction (src/graph/writes.ts).
    const found = await as(tenant.api_key).post('/v1/ontology/symbol-context', {
      name: 'src/graph/repository.ts#insertNode',
      type: 'code.function',
      limit: 100,
    });
    expect(found.status).to.equal(200);
    const callers = found.body.callers.map((caller: { key: string }) => caller.key);
    expect(callers).to.include('src/graph/writes.ts#createNodeInTransaction');
    const { stdout } = await run('git', ['log', '--no-merges', '--format=%H', '--', 'src/graph/repository.ts'], {
      cwd: clone,
    });
    const touched = stdout.trim().split('\n');
    expect(touched.length).to.be.greaterThan(0);
    const commits = found.body.recent_commits.map((commit: { sha: string }) => commit.sha);
    expect([...commits].sort()).to.deep.equal([...touched].slice(0, 100).sort());
  });
});
