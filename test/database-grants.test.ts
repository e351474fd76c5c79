import { expect } from 'chai';
import { capClient } from './helpers/cap';
import { getStack } from './helpers/stack';
import { newTenant } from './helpers/tenants';

describe('database: SECURITY DEFINER functions (review L-2)', () => {
  it('none is executable by PUBLIC: each runs with the owner’s rights, so only the app role may call it', async () => {
    // A catalog check, so a definer function added by any later migration without its REVOKE fails here.
    const open: { fn: string }[] = await getStack().ownerDataSource.query(
      `SELECT p.oid::regprocedure::text AS fn FROM pg_proc p JOIN pg_namespace n ON n.oid = p.pronamespace
       WHERE p.prosecdef AND n.nspname NOT IN ('pg_catalog', 'information_schema')
         AND has_function_privilege('public', p.oid, 'EXECUTE')
       ORDER BY 1`,
    );
    expect(open.map((row) => row.fn)).to.deep.equal([]);
  });

  it('the Idempotency-Key purge holds its 24 h window: a caller cannot pass one, nor delete a young key', async () => {
    const { api_key, workspace_id } = await newTenant();
    await capClient(api_key)('agent.start_session', { name: 'young key' }, 'grants-young');
    const app = getStack().runtime.dataSource;
    const refused = await app.query(`SELECT weft_purge_idempotency_keys(interval '0 seconds', 1000)`).then(
      () => 'accepted',
      (error: Error) => error.message,
    );
    expect(refused).to.match(/does not exist/);

    // The app role still purges, and a purge as it runs leaves the key of a moment ago alone.
    await app.query(`SELECT weft_purge_idempotency_keys(1000)`);
    const left = await getStack().ownerDataSource.query(
      `SELECT idempotency_key FROM capability_idempotency_keys WHERE workspace_id = $1`,
      [workspace_id],
    );
    expect(left.map((row: { idempotency_key: string }) => row.idempotency_key)).to.deep.equal(['grants-young']);
  });
});
