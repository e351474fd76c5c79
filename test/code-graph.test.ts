import { mkdtemp } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { expect } from 'chai';
import { capClient } from './helpers/cap';
import { scratchRepo, weftIndex } from './helpers/code-index';
import { eventually } from './helpers/eventually';
import { createNode } from './helpers/graph';
import { as } from './helpers/http';
import { getStack } from './helpers/stack';
import { creditBalance, newTenant } from './helpers/tenants';

const MATH_V1 = `/** Adds two numbers. */
export function add(a: number, b: number): number {
  return a + b;
}

export const double = (x: number): number => add(x, x);
`;
const MATH_V2 = `${MATH_V1}
export function square(x: number): number {
  return x * x;
}
`;
const calc = (resetName: string) => `import { add, double } from './math';

/** A running total. */
export class Calc {
  total = 0;

  plus(x: number): number {
    this.total = add(this.total, x);
    return this.total;
  }

  twice(): number {
    return this.plus(double(this.total));
  }

  ${resetName}(): void {
    this.total = 0;
  }
}
`;
const TEST = `import { Calc } from '../src/calc';
import { add } from '../src/math';

describe('math', () => {
  it('adds', () => {
    add(1, 2);
  });
  it('keeps a total', () => {
    new Calc().plus(1);
  });
});
`;

// A nested helper and a module initializer (issue 45).
const BOOT = `export function start(): number {
  function step(n: number): number {
    return n + 1;
  }
  return step(0);
}

export const ready = start();
`;

const names = (list: { name: string }[]) => list.map((item) => item.name);

describe('code graph: weft index, POST /v1/code/ingest and POST /v1/ontology/symbol-context', function () {
  this.timeout(120_000);
  let tenant: Awaited<ReturnType<typeof newTenant>>;
  let repo: Awaited<ReturnType<typeof scratchRepo>>;
  const sha: string[] = [];
  let summary: Record<string, any>;

  const context = (body: unknown, token = tenant.api_key) => as(token).post('/v1/ontology/symbol-context', body);
  const symbol = async (name: string, type: string) => {
    const found = await context({ name, type });
    expect(found.status, JSON.stringify(found.body)).to.equal(200);
    return found.body;
  };

  before(async () => {
    tenant = await newTenant(1000);
    repo = await scratchRepo();
    await repo.write({
      'src/math.ts': MATH_V1,
      'src/calc.ts': calc('reset'),
      'src/util.ts': 'export function identity<T>(x: T): T {\n  return x;\n}\n',
      'src/broken.ts': 'export function (((\n',
      'src/boot.ts': BOOT,
      'test/math.test.ts': TEST,
      'README.md': '# fixture\n',
    });
    sha.push(await repo.commit('First cut', 'Alice <alice@example.org>', '2026-01-01T10:00:00Z'));
    await repo.write({ 'src/math.ts': MATH_V2 });
    sha.push(await repo.commit('Square', 'Bob <bob@example.org>', '2026-01-02T10:00:00Z'));
    await repo.git(['mv', 'src/util.ts', 'src/helpers.ts']);
    sha.push(await repo.commit('Rename util to helpers', 'Carol <carol@example.org>', '2026-01-03T10:00:00Z'));

    const indexed = await weftIndex(repo.dir, tenant.api_key, '--repo', 'fixture');
    expect(indexed.code, indexed.stderr).to.equal(0);
    summary = JSON.parse(indexed.stdout);
    // The progress bar and the phases go to stderr (one line per phase when not a terminal).
    expect(indexed.stderr)
      .to.match(/parsing: 6\/6/)
      .and.match(/sending: \d+\/\d+/);
  });

  it('summarises files, symbols, edges, commits, skipped files and the time taken', () => {
    expect(summary).to.include({ repo: 'fixture', files: 5, commits: 3 });
    // 5 files, add/double/square, Calc + plus/twice/reset, identity, the describe body and two tests,
    // start and its nested step.
    expect(summary.symbols).to.equal(5 + 3 + 4 + 1 + 3 + 2);
    expect(summary.edges).to.be.greaterThan(10);
    expect(summary.skipped).to.deep.equal([{ path: 'src/broken.ts', reason: 'does not parse' }]);
    expect(summary.seconds).to.be.a('number');
  });

  it('answers each list of a function’s context: callers, callees, tests and commits', async () => {
    const add = await symbol('add', 'code.function');
    expect(add.symbol).to.include({ type: 'code.function', name: 'add' });
    expect(add.symbol.properties).to.include({ key: 'src/math.ts#add', path: 'src/math.ts', line: 2 });
    expect(add.symbol.properties.signature).to.equal('function add(a: number, b: number): number');
    expect(add.symbol.properties.doc).to.equal('Adds two numbers.');
    expect(add.containing_class).to.equal(null);
    expect(add.sibling_methods).to.deep.equal([]);
    expect(names(add.callers)).to.deep.equal(['Calc.plus', 'double']);
    expect(add.callees).to.deep.equal([]);
    expect(names(add.tests)).to.deep.equal(['math › adds']);
    expect(add.recent_commits).to.deep.equal([
      {
        sha: sha[1],
        message: 'Square',
        author: 'Bob <bob@example.org>',
        committed_at: '2026-01-02T10:00:00.000Z',
        action: 'modified',
      },
      {
        sha: sha[0],
        message: 'First cut',
        author: 'Alice <alice@example.org>',
        committed_at: '2026-01-01T10:00:00.000Z',
        action: 'added',
      },
    ]);
    expect(add.credit_receipt).to.include({ kind: 'ontology.symbol_context', amount: 1 });
  });

  it('answers a method’s class, siblings, callers, callees and tests', async () => {
    const plus = await symbol('Calc.plus', 'code.method');
    expect(plus.containing_class).to.include({ name: 'Calc', type: 'code.class', key: 'src/calc.ts#Calc' });
    expect(names(plus.sibling_methods)).to.deep.equal(['Calc.reset', 'Calc.twice']);
    expect(names(plus.callers)).to.deep.equal(['Calc.twice']);
    expect(names(plus.callees)).to.deep.equal(['add']);
    expect(names(plus.tests)).to.deep.equal(['math › keeps a total']);
    expect(plus.recent_commits.map((c: { sha: string }) => c.sha)).to.deep.equal([sha[0]]);

    const twice = await symbol('src/calc.ts#Calc.twice', 'code.method');
    expect(names(twice.callees)).to.deep.equal(['Calc.plus', 'double']);
    expect(twice.tests).to.deep.equal([]);
  });

  it('answers a nested helper’s and a module initializer’s callers and callees (issue 45)', async () => {
    const step = await symbol('start.step', 'code.function');
    expect(step.symbol.properties).to.include({ key: 'src/boot.ts#start.step', line: 2 });
    expect(names(step.callers)).to.deep.equal(['start']);
    // Its commits are its file's, found through the function it is nested in.
    expect(step.recent_commits.map((c: { sha: string }) => c.sha)).to.deep.equal([sha[0]]);
    const start = await symbol('start', 'code.function');
    expect(names(start.callees)).to.deep.equal(['start.step']);
    expect(names(start.callers)).to.deep.equal(['src/boot.ts']);
    const boot = await symbol('src/boot.ts', 'code.file');
    expect(names(boot.callees)).to.deep.equal(['start']);
    const suite = await symbol('(describe) math', 'code.test');
    expect(suite.symbol.properties).to.include({ key: 'test/math.test.ts#(describe) math' });
  });

  it('labels a renamed file’s commit `renamed` and caps each list at `limit`', async () => {
    const identity = await symbol('identity', 'code.function');
    expect(identity.symbol.properties.path).to.equal('src/helpers.ts');
    expect(identity.recent_commits.map((c: any) => [c.sha, c.action])).to.deep.equal([[sha[2], 'renamed']]);

    const capped = await context({ name: 'add', type: 'code.function', limit: 1 });
    expect(names(capped.body.callers)).to.deep.equal(['Calc.plus']);
    expect(capped.body.recent_commits).to.have.length(1);
    expect((await context({ node_id: capped.body.symbol.id, limit: 101 })).status).to.equal(422);
  });

  it('pages callers, callees and tests with a cursor; a cursor it did not make is a 422', async () => {
    const first = await context({ name: 'add', type: 'code.function', limit: 1 });
    expect(names(first.body.callers)).to.deep.equal(['Calc.plus']);
    expect(first.body.next_cursors.tests).to.equal(null);
    const cursor = first.body.next_cursors.callers;
    expect(cursor).to.be.a('string');
    const second = await context({ node_id: first.body.symbol.id, limit: 1, cursors: { callers: cursor } });
    expect(second.status, JSON.stringify(second.body)).to.equal(200);
    expect(names(second.body.callers)).to.deep.equal(['double']);
    expect(second.body.next_cursors.callers).to.equal(null);
    const twice = await context({ name: 'Calc.twice', type: 'code.method', limit: 1 });
    expect(names(twice.body.callees)).to.deep.equal(['Calc.plus']);
    // The whole next_cursors object goes back as is (its nulls: lists without a next page).
    const after = await context({
      name: 'Calc.twice',
      type: 'code.method',
      limit: 1,
      cursors: twice.body.next_cursors,
    });
    expect(after.status, JSON.stringify(after.body)).to.equal(200);
    expect(names(after.body.callees)).to.deep.equal(['double']);
    expect(after.body.next_cursors.callees).to.equal(null);

    const bad = await context({ node_id: first.body.symbol.id, cursors: { callers: 'not-a-cursor' } });
    expect(bad.status).to.equal(422);
    expect(JSON.stringify(bad.body)).to.include('callers');
  });

  it('marks each call edge with how it was resolved: by the type checker here', async () => {
    const rows = await getStack().ownerDataSource.query(
      `SELECT s.name AS source, t.name AS target, e.properties->>'resolution' AS resolution
       FROM edges e JOIN nodes s ON s.id = e.source_node_id JOIN nodes t ON t.id = e.target_node_id
       WHERE e.workspace_id = $1 AND e.type IN ('CALLS', 'TESTS') AND NOT e.is_deleted ORDER BY 1, 2`,
      [tenant.workspace_id],
    );
    expect(rows).to.deep.include({ source: 'Calc.plus', target: 'add', resolution: 'type' });
    expect(rows).to.deep.include({ source: 'math › keeps a total', target: 'Calc.plus', resolution: 'type' });
    expect(rows.every((row: { resolution: string }) => row.resolution === 'type')).to.equal(true);
  });

  it('lists the nearest code nodes by embedding once embedded, the symbol itself and commits excluded', async () => {
    const add = await symbol('add', 'code.function');
    await eventually(
      async () => (await as(tenant.api_key).get(`/v1/ontology/nodes/${add.symbol.id}`)).body.has_embedding === true,
      { what: 'add to be embedded', timeoutMs: 60_000 },
    );
    // Every code node of the fixture except commits: 5 files, 6 functions (start.step nested), a class,
    // 3 methods, 3 tests (the describe body and two its).
    const again = await eventually(
      async () => {
        const found = await context({ node_id: add.symbol.id, limit: 50 });
        return found.body.semantic.length === 17 && found.body;
      },
      { what: 'the fixture’s other code nodes to be embedded', timeoutMs: 60_000 },
    );
    const ids = again.semantic.map((item: { id: string }) => item.id);
    expect(ids).not.to.include(add.symbol.id);
    expect(again.semantic.every((item: { type: string }) => item.type.startsWith('code.'))).to.equal(true);
    expect(again.semantic.some((item: { type: string }) => item.type === 'code.commit')).to.equal(false);
    const similarities = again.semantic.map((item: { similarity: number }) => item.similarity);
    expect(similarities).to.deep.equal([...similarities].sort((a, b) => b - a));
  });

  it('charges 1 credit first: 402 when short; 400, 404 and 409 are refunded', async () => {
    const broke = await newTenant(0);
    const short = await context({ name: 'add', type: 'code.function' }, broke.api_key);
    expect(short.status).to.equal(402);
    expect(short.body.detail).to.include({ error: 'insufficient_credits', kind: 'ontology.symbol_context' });

    const dupA = await createNode(tenant.api_key, 'code.function', 'twin');
    const dupB = await createNode(tenant.api_key, 'code.function', 'twin');
    const before = await creditBalance(tenant.tenant_id);
    const neither = await context({ name: 'add' });
    expect(neither.status).to.equal(400);
    expect((await context({})).status).to.equal(400);
    expect((await context({ node_id: '00000000-0000-4000-8000-000000000000' })).status).to.equal(404);
    expect((await context({ name: 'nothing', type: 'code.function' })).status).to.equal(404);
    const ambiguous = await context({ name: 'twin', type: 'code.function' });
    expect(ambiguous.status).to.equal(409);
    expect(ambiguous.body.detail.error).to.equal('ambiguous_symbol');
    expect([...ambiguous.body.detail.candidate_ids].sort()).to.deep.equal([dupA, dupB].sort());
    expect(await creditBalance(tenant.tenant_id)).to.equal(before);
    expect((await context({ node_id: dupA })).status).to.equal(200);
    expect(await creditBalance(tenant.tenant_id)).to.equal(before - 1);
  });

  it('keeps another workspace’s symbols out of reach, by id and by (name, type)', async () => {
    const add = await symbol('add', 'code.function');
    const stranger = await newTenant(10);
    expect((await context({ node_id: add.symbol.id }, stranger.api_key)).status).to.equal(404);
    expect((await context({ name: 'add', type: 'code.function' }, stranger.api_key)).status).to.equal(404);
    expect((await context({ name: 'src/math.ts#add', type: 'code.function' }, stranger.api_key)).status).to.equal(404);
  });

  it('re-indexes in place: a renamed method’s old node is soft-deleted, claims and findings survive', async () => {
    const cap = capClient(tenant.api_key);
    const file = (await symbol('src/calc.ts', 'code.file')).symbol.id;
    const plus = (await symbol('Calc.plus', 'code.method')).symbol.id;
    const reset = (await symbol('Calc.reset', 'code.method')).symbol.id;
    const { session_id } = (await cap('agent.start_session')).body.result;
    const claim = await cap('agent.claim_work', { session_id, target_node_id: file, intent: 'tidy Calc' });
    expect(claim.status).to.equal(200);
    const finding = await cap('agent.record_finding', {
      session_id,
      target_node_id: plus,
      severity: 'low',
      kind: 'complexity',
      title: 'plus mutates and returns',
    });
    expect(finding.status).to.equal(200);

    await repo.write({ 'src/calc.ts': calc('clear') });
    sha.push(await repo.commit('Calc: reset is clear', 'Alice <alice@example.org>', '2026-01-04T10:00:00Z'));
    const again = await weftIndex(repo.dir, tenant.api_key, '--repo', 'fixture');
    expect(again.code, again.stderr).to.equal(0);
    const second = JSON.parse(again.stdout);
    expect(second.deleted_symbols).to.equal(1);
    expect(second.created).to.equal(2); // Calc.clear and the new commit

    expect((await as(tenant.api_key).get(`/v1/ontology/nodes/${reset}`)).status).to.equal(404);
    const [row] = await getStack().ownerDataSource.query(`SELECT is_deleted FROM nodes WHERE id = $1`, [reset]);
    expect(row.is_deleted).to.equal(true);
    expect((await context({ name: 'Calc.reset', type: 'code.method' })).status).to.equal(404);
    const clear = await symbol('Calc.clear', 'code.method');
    expect(clear.containing_class.name).to.equal('Calc');

    const plusAgain = await symbol('Calc.plus', 'code.method');
    expect(plusAgain.symbol.id).to.equal(plus);
    expect(names(plusAgain.sibling_methods)).to.deep.equal(['Calc.clear', 'Calc.twice']);
    expect((await symbol('src/calc.ts', 'code.file')).symbol.id).to.equal(file);
    const claims = await cap('agent.list_active_claims', { target_node_id: file });
    expect(claims.body.result.claims.map((c: { claim_id: string }) => c.claim_id)).to.deep.equal([
      claim.body.result.claim_id,
    ]);
    const findings = await cap('agent.get_findings', { target_node_id: plus });
    expect(findings.body.result.findings.map((f: { finding_id: string }) => f.finding_id)).to.deep.equal([
      finding.body.result.finding_id,
    ]);
    expect(plusAgain.recent_commits.map((c: { sha: string }) => c.sha)).to.deep.equal([sha[3], sha[0]]);

    // Nothing changed: the same keys, nothing created, updated or deleted (no new versions), the
    // nested helper and the describe body included.
    const step = (await symbol('start.step', 'code.function')).symbol.id;
    const suite = (await symbol('(describe) math', 'code.test')).symbol.id;
    const third = await weftIndex(repo.dir, tenant.api_key, '--repo', 'fixture');
    expect(third.code, third.stderr).to.equal(0);
    expect(JSON.parse(third.stdout)).to.include({ created: 0, updated: 0, deleted_symbols: 0 });
    expect((await symbol('start.step', 'code.function')).symbol.id).to.equal(step);
    expect((await symbol('(describe) math', 'code.test')).symbol.id).to.equal(suite);
  });

  it('gives clear CLI errors for a missing path and a directory that is not a git repository', async () => {
    const missing = await weftIndex('/nonexistent/weft-repo', tenant.api_key);
    expect(missing.code).to.equal(1);
    expect(missing.stderr).to.include('no such directory');
    const plain = await mkdtemp(path.join(tmpdir(), 'weft-plain-'));
    const notGit = await weftIndex(plain, tenant.api_key);
    expect(notGit.code).to.equal(1);
    expect(notGit.stderr).to.include('not a git repository');
  });

  it('answers 409 to a batch while another batch of the repository is being applied, 422 beyond the caps', async () => {
    const ingest = (body: unknown) => as(tenant.api_key).post('/v1/code/ingest', body);
    const batch = {
      repo: 'fixture',
      run_id: '0b7d1d40-5c8a-4d6e-9a59-3f7e0a1c2b3d',
      symbols: [{ kind: 'file', path: 'src/x.ts', name: 'src/x.ts' }],
    };
    const tooMany = {
      ...batch,
      symbols: Array.from({ length: 501 }, (_, i) => ({ ...batch.symbols[0], name: `f${i}` })),
    };
    expect((await ingest(tooMany)).status).to.equal(422);
    expect((await ingest({ ...batch, repo: 'a/b' })).status).to.equal(422);
    const longName = { ...batch, symbols: [{ kind: 'function', path: 'src/x.ts', name: 'f'.repeat(301) }] };
    expect((await ingest(longName)).status).to.equal(422);
    const both = await Promise.all([ingest(batch), ingest(batch)]);
    const statuses = both.map((response) => response.status).sort();
    // Usually one is refused while the other runs; on a slow worker both can pass one after another.
    expect(statuses[0]).to.equal(200);
    expect([200, 409]).to.include(statuses[1]);
    const applied = both.find((response) => response.status === 200);
    expect(applied?.body.workflow_id).to.equal(`code-index-${tenant.workspace_id}-fixture`);
  });
});
