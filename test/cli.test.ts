import { execFile } from 'node:child_process';
import path from 'node:path';
import { promisify } from 'node:util';
import { expect } from 'chai';
import { decodeJwt } from 'jose';
import { as } from './helpers/http';
import { getStack } from './helpers/stack';

const run = promisify(execFile);
const ROOT = path.resolve(__dirname, '..');

/** The CLI exactly as a user runs it, against the test database. */
async function weft(...args: string[]): Promise<{ code: number; stdout: string; stderr: string }> {
  try {
    const { stdout, stderr } = await run(path.join(ROOT, 'node_modules/.bin/tsx'), ['src/cli/main.ts', ...args], {
      cwd: ROOT,
      env: process.env,
    });
    return { code: 0, stdout, stderr };
  } catch (error) {
    const failed = error as { code: number; stdout: string; stderr: string };
    return { code: failed.code, stdout: failed.stdout, stderr: failed.stderr };
  }
}

describe('weft CLI', function () {
  // Each call is a fresh `tsx` process that compiles the CLI (5 s or more on 2 busy cores); a test makes up to three.
  this.timeout(90_000);

  it('bootstrap prints one JSON line whose key and JWT both work', async () => {
    const result = await weft('bootstrap', '--credits', '25', '--json');
    expect(result.code).to.equal(0);
    const lines = result.stdout.trim().split('\n');
    expect(lines).to.have.length(1);
    const created = JSON.parse(lines[0]!);
    expect(created).to.have.all.keys('tenant_id', 'workspace_id', 'user_id', 'api_key', 'user_jwt');
    expect((await as(created.api_key).get('/v1/auth/me/api-keys')).status).to.equal(200);
    expect((await as(created.user_jwt).get('/v1/auth/me/api-keys')).status).to.equal(200);
    const [tenant] = await getStack().ownerDataSource.query(`SELECT credit_balance FROM tenants WHERE id = $1`, [
      created.tenant_id,
    ]);
    expect(Number(tenant.credit_balance)).to.equal(25);

    const joined = JSON.parse((await weft('bootstrap', '--workspace', created.workspace_id)).stdout);
    expect(joined.workspace_id).to.equal(created.workspace_id);
    expect(joined.user_id).not.to.equal(created.user_id);
    expect(joined.tenant_id).to.equal(created.tenant_id);
    const keys = await as(joined.user_jwt).get('/v1/auth/me/api-keys');
    expect(keys.body.map((key: { workspace_id: string }) => key.workspace_id)).to.deep.equal([created.workspace_id]);
  });

  it('credits grant adds to the balance and records a ledger row', async () => {
    const created = JSON.parse((await weft('bootstrap')).stdout);
    const granted = await weft('credits', 'grant', '--tenant', created.tenant_id, '--amount', '40');
    expect(granted.code).to.equal(0);
    expect(JSON.parse(granted.stdout)).to.deep.equal({ tenant_id: created.tenant_id, balance: 40 });
    const rows = await getStack().ownerDataSource.query(`SELECT amount FROM credit_ledger WHERE tenant_id = $1`, [
      created.tenant_id,
    ]);
    expect(rows.map((row: { amount: number }) => row.amount)).to.deep.equal([40]);
  });

  it('tokens revoke refuses a user JWT from its next request on, by jti or by the token itself', async () => {
    const created = JSON.parse((await weft('bootstrap')).stdout);
    const other = await getStack().provisioning.bootstrap({ workspaceId: created.workspace_id });
    expect((await as(created.user_jwt).get('/v1/auth/me/api-keys')).status).to.equal(200);
    const { jti } = decodeJwt(created.user_jwt);
    expect(jti).to.match(/^[0-9a-f-]{36}$/);

    const byJti = await weft('tokens', 'revoke', '--jti', String(jti));
    expect(byJti.code).to.equal(0);
    expect(JSON.parse(byJti.stdout)).to.include({ jti });
    const refused = await as(created.user_jwt).get('/v1/auth/me/api-keys');
    expect(refused.status).to.equal(401);
    // Even asking for another workspace says only that the credential is no good.
    expect((await as(created.user_jwt).get(`/v1/ontology/config?workspace_id=${other.workspace_id}`)).status).to.equal(
      401,
    );
    // The key bootstrap printed, and other JWTs of the same user, are untouched.
    expect((await as(created.api_key).get('/v1/auth/me/api-keys')).status).to.equal(200);
    const sameUser = await getStack().runtime.jwt.signUser(created.user_id, created.workspace_id);
    expect((await as(sameUser).get('/v1/auth/me/api-keys')).status).to.equal(200);

    const byToken = await weft('tokens', 'revoke', '--token', other.user_jwt);
    expect(byToken.code).to.equal(0);
    expect(Date.parse(JSON.parse(byToken.stdout).expires_at)).to.equal(Number(decodeJwt(other.user_jwt).exp) * 1000);
    expect((await as(other.user_jwt).get('/v1/auth/me/api-keys')).status).to.equal(401);
    // Revoking again is a no-op.
    expect((await weft('tokens', 'revoke', '--jti', String(jti))).code).to.equal(0);
    expect((await weft('tokens', 'revoke', '--token', 'not-a-jwt')).code).to.equal(1);
    expect((await weft('tokens', 'revoke')).code).to.equal(2);
  });

  it('explains bad arguments and exits non-zero', async () => {
    expect((await weft('credits', 'grant', '--tenant', 'nope', '--amount', '5')).code).to.equal(2);
    expect((await weft('frobnicate')).stderr).to.contain('usage:');
    const missing = await weft('credits', 'grant', '--tenant', '00000000-0000-4000-8000-000000000000', '--amount', '5');
    expect(missing.code).to.equal(1);
    expect(missing.stderr).to.contain('not found');
  });
});
