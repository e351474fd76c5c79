import { mkdtemp, open, rm, symlink, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { expect } from 'chai';
import { capClient } from './helpers/cap';
import { scratchRepo, weftIndex } from './helpers/code-index';
import { createEdge } from './helpers/graph';
import { as } from './helpers/http';
import { newTenant } from './helpers/tenants';

const A = `export function alpha(): number {\n  return 1;\n}\n
export function beta(): number {\n  return alpha();\n}\n`;
const B = `import { alpha } from '../a/x';\n\nexport function Gamma(): number {\n  return alpha() + 1;\n}\n`;
const C = `export function delta(): number {\n  return 4;\n}\n`;

type Tenant = Awaited<ReturnType<typeof newTenant>>;

/** `weft index` that must succeed; answers its summary. */
async function indexed(dir: string, tenant: Tenant, ...extra: string[]): Promise<Record<string, any>> {
  const result = await weftIndex(dir, tenant.api_key, '--repo', 'coverage', ...extra);
  expect(result.code, result.stderr).to.equal(0);
  return JSON.parse(result.stdout);
}

/** The live node of a function, or undefined. */
async function fn(tenant: Tenant, name: string): Promise<string | undefined> {
  const found = await as(tenant.api_key).post('/v1/ontology/symbol-context', { name, type: 'code.function' });
  return found.status === 200 ? found.body.symbol.id : undefined;
}

describe('code graph: what a pass covers (review M-8) and what the indexer reads (review L-6)', function () {
  this.timeout(120_000);

  it('keeps what an --include or skipping pass did not cover; findings and user edges survive every pass', async () => {
    const tenant = await newTenant(1000);
    const cap = capClient(tenant.api_key);
    const repo = await scratchRepo();
    await repo.write({ 'a/x.ts': A, 'b/y.ts': B, 'c/z.ts': C });
    await repo.commit('Three files', 'Alice <alice@example.org>', '2026-01-01T10:00:00Z');
    await indexed(repo.dir, tenant);
    const gamma = (await fn(tenant, 'Gamma')) as string;
    const delta = (await fn(tenant, 'delta')) as string;
    expect(gamma).to.be.a('string');

    // The review's scenario: a finding on Gamma, a user's edge to it, then an `--include a/` pass.
    const { session_id } = (await cap('agent.start_session')).body.result;
    const finding = await cap('agent.record_finding', {
      session_id,
      target_node_id: gamma,
      severity: 'low',
      kind: 'complexity',
      title: 'Gamma leans on alpha',
    });
    expect(finding.status, finding.text).to.equal(200);
    const userEdge = await createEdge(tenant.api_key, delta, gamma, 'RELATES_TO');
    const claim = await cap('agent.claim_work', { session_id, target_node_id: gamma, intent: 'simplify Gamma' });
    expect(claim.status, claim.text).to.equal(200);

    const partial = await indexed(repo.dir, tenant, '--include', 'a/');
    expect(partial).to.include({ files: 1, deleted_symbols: 0 });
    expect(await fn(tenant, 'Gamma')).to.equal(gamma);

    // A file the pass skips (it does not parse now) keeps its symbols too.
    await repo.write({ 'b/y.ts': 'export function (((\n' });
    const skipping = await indexed(repo.dir, tenant);
    expect(skipping.skipped).to.deep.equal([{ path: 'b/y.ts', reason: 'does not parse' }]);
    expect(skipping.deleted_symbols).to.equal(0);
    expect(await fn(tenant, 'Gamma')).to.equal(gamma);

    // A full pass without Gamma deletes it, but not the edges the indexer did not write …
    await repo.write({ 'b/y.ts': 'export const unrelated = 1;\n' });
    const without = await indexed(repo.dir, tenant);
    expect(without.deleted_symbols).to.equal(1);
    expect(await fn(tenant, 'Gamma')).to.equal(undefined);

    // … so when a later pass brings it back (same id), its finding and the user's edge are still attached.
    await repo.write({ 'b/y.ts': B });
    await indexed(repo.dir, tenant);
    expect(await fn(tenant, 'Gamma')).to.equal(gamma);
    const findings = await cap('agent.get_findings', { target_node_id: gamma });
    expect(findings.body.result.findings.map((f: { finding_id: string }) => f.finding_id)).to.deep.equal([
      finding.body.result.finding_id,
    ]);
    expect((await as(tenant.api_key).get(`/v1/ontology/edges/${userEdge}`)).status).to.equal(200);
    const claims = await cap('agent.list_active_claims', { target_node_id: gamma });
    expect(claims.body.result.claims.map((c: { claim_id: string }) => c.claim_id)).to.deep.equal([
      claim.body.result.claim_id,
    ]);
  });

  it('skips a tracked symlink that leaves the repository, and a huge file by its size before reading it', async () => {
    const tenant = await newTenant(1000);
    const outside = await mkdtemp(path.join(tmpdir(), 'weft-outside-'));
    await writeFile(
      path.join(outside, 'secret.ts'),
      '/** AKIA-EXAMPLE-0000 */\nexport function leakedSecret(): string {\n  return "x";\n}\n',
    );
    const repo = await scratchRepo();
    await repo.write({ 'src/ok.ts': C, 'src/huge.ts': C });
    await symlink(path.join(outside, 'secret.ts'), path.join(repo.dir, 'src/leak.ts'));
    await symlink('/dev/zero', path.join(repo.dir, 'src/zero.ts'));
    await repo.commit('Links', 'Alice <alice@example.org>', '2026-01-01T10:00:00Z');
    // The working copy of a tracked file grows to 3 GiB (sparse): reading it first would fail or exhaust memory.
    await rm(path.join(repo.dir, 'src/huge.ts'));
    const huge = await open(path.join(repo.dir, 'src/huge.ts'), 'w');
    await huge.truncate(3 * 1024 ** 3);
    await huge.close();

    const summary = await indexed(repo.dir, tenant);
    expect(summary.skipped).to.deep.equal([
      { path: 'src/huge.ts', reason: 'larger than 1 MiB' },
      { path: 'src/leak.ts', reason: 'links out of the repository' },
      { path: 'src/zero.ts', reason: 'links out of the repository' },
    ]);
    expect(await fn(tenant, 'leakedSecret')).to.equal(undefined);
    expect(await fn(tenant, 'delta')).to.be.a('string');
  });
});
