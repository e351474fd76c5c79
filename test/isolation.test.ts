import { randomUUID } from 'node:crypto';
import { expect } from 'chai';
import type { DataSource, EntityManager } from 'typeorm';
import { createAppDataSource } from '../src/app/data-source';
import { createScopedRead, createUnitOfWork } from '../src/platform/db/unit-of-work';
import { as } from './helpers/http';
import { getStack } from './helpers/stack';
import { newTenant } from './helpers/tenants';

/** Runs `check` on a one-connection pool, so every query in it reuses the same session. */
async function onOneConnection(check: (single: DataSource) => Promise<void>): Promise<void> {
  const single = await createAppDataSource({ ...getStack().config, DATABASE_POOL_SIZE: 1 }).initialize();
  try {
    await check(single);
  } finally {
    await single.destroy();
  }
}

/** Tables with a workspace_id column, read from the catalog so a new table cannot slip past. */
async function workspaceTables(): Promise<string[]> {
  const rows: { table_name: string }[] = await getStack().ownerDataSource.query(
    `SELECT c.table_name FROM information_schema.columns c
     JOIN information_schema.tables t ON t.table_schema = c.table_schema AND t.table_name = c.table_name
     WHERE c.table_schema = 'public' AND c.column_name = 'workspace_id' AND t.table_type = 'BASE TABLE'
     ORDER BY 1`,
  );
  return rows.map((row) => row.table_name);
}

const SEEDED = [
  'nodes',
  'edges',
  'type_catalog',
  'credit_ledger',
  'prompt_runs',
  'outbox',
  'events',
  'workspace_settings',
  'api_keys',
  'api_key_daily_usage',
  'memberships',
];

/** One row in every workspace table of the foundation for the given workspace, written through the owner connection. */
async function seedWorkspace(workspaceId: string, tenantId: string, userId: string) {
  const owner = getStack().ownerDataSource;
  const [node] = await owner.query(
    `INSERT INTO nodes (workspace_id, type, name) VALUES ($1, 'secret', $2) RETURNING id`,
    [workspaceId, `Secret of ${workspaceId}`],
  );
  await owner.query(
    `INSERT INTO edges (workspace_id, type, source_node_id, target_node_id) VALUES ($1, 'self', $2, $2)`,
    [workspaceId, node.id],
  );
  await owner.query(`INSERT INTO type_catalog (workspace_id, kind, name, row_count) VALUES ($1, 'node', 'secret', 1)`, [
    workspaceId,
  ]);
  const [reservation] = await owner.query(
    `INSERT INTO credit_ledger (tenant_id, workspace_id, kind, amount) VALUES ($1, $2, 'ontology.search.hybrid', -1)
     RETURNING id`,
    [tenantId, workspaceId],
  );
  await owner.query(
    `INSERT INTO prompt_runs (workspace_id, correlation_id, prompt_kind, source_hash, intent, status,
     linked_credit_ledger_id)
     VALUES ($1, $2, 'markdown_text', repeat('a', 64), 'query', 'ok', $3)`,
    [workspaceId, randomUUID(), reservation.id],
  );
  await owner.query(
    `INSERT INTO outbox (workspace_id, event_type, aggregate_id, dispatched_at) VALUES ($1, 'test.seed', $2, now())`,
    [workspaceId, node.id],
  );
  await owner.query(`INSERT INTO events (workspace_id, event_type) VALUES ($1, 'test.seed')`, [workspaceId]);
  await owner.query(`INSERT INTO workspace_settings (workspace_id) VALUES ($1) ON CONFLICT DO NOTHING`, [workspaceId]);
  const [key] = await owner.query(`SELECT id FROM api_keys WHERE user_id = $1 LIMIT 1`, [userId]);
  await owner.query(
    `INSERT INTO api_key_daily_usage (api_key_id, day, workspace_id, user_id, request_count)
     VALUES ($1, current_date, $2, $3, 1)
     ON CONFLICT DO NOTHING`,
    [key.id, workspaceId, userId],
  );
  return { nodeId: node.id as string };
}

describe('workspace isolation in the database (RLS)', () => {
  let a: Awaited<ReturnType<typeof newTenant>>;
  let b: Awaited<ReturnType<typeof newTenant>>;
  let tables: string[];

  before(async () => {
    a = await newTenant();
    b = await newTenant();
    await seedWorkspace(a.workspace_id, a.tenant_id, a.user_id);
    await seedWorkspace(b.workspace_id, b.tenant_id, b.user_id);
    tables = await workspaceTables();
  });

  it('every table with a workspace_id column has forced RLS and a policy', async () => {
    expect(tables).to.include.members(['nodes', 'edges', 'credit_ledger', 'api_keys', 'memberships']);
    const rows: { relname: string; relrowsecurity: boolean; relforcerowsecurity: boolean; policies: number }[] =
      await getStack().ownerDataSource.query(
        `SELECT c.relname, c.relrowsecurity, c.relforcerowsecurity,
                (SELECT count(*)::int FROM pg_policy p WHERE p.polrelid = c.oid) AS policies
         FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace
         WHERE n.nspname = 'public' AND c.relname = ANY($1)`,
        [tables],
      );
    const unprotected = rows.filter((row) => !row.relrowsecurity || !row.relforcerowsecurity || row.policies === 0);
    expect(unprotected.map((row) => row.relname)).to.deep.equal([]);
    expect(rows).to.have.length(tables.length);
  });

  it('the application role is no superuser, cannot bypass RLS and owns no table', async () => {
    const [role] = await getStack().runtime.dataSource.query(
      `SELECT rolsuper, rolbypassrls, current_user AS name,
              (SELECT count(*)::int FROM pg_tables WHERE schemaname = 'public' AND tableowner = current_user) AS owned
       FROM pg_roles WHERE rolname = current_user`,
    );
    expect(role).to.deep.include({ rolsuper: false, rolbypassrls: false, owned: 0 });
  });

  it('a session without the workspace setting sees no row of any workspace table', async () => {
    for (const table of tables) {
      const rows = await getStack().runtime.dataSource.query(`SELECT * FROM ${table}`);
      expect(rows, table).to.have.length(0);
    }
  });

  it("workspace A's session never sees B's rows, even with SELECT *", async () => {
    const { uow } = getStack().runtime;
    for (const table of tables) {
      const rows: { workspace_id: string | null }[] = await uow(
        { workspaceId: a.workspace_id, userId: a.user_id },
        (m) => m.query(`SELECT * FROM ${table}`),
      );
      if (SEEDED.includes(table)) expect(rows.length, `${table} shows A its own rows`).to.be.greaterThan(0);
      expect(
        rows.filter((row) => row.workspace_id === b.workspace_id),
        table,
      ).to.have.length(0);
    }
  });

  it("A's session can neither write into B nor change B's rows", async () => {
    const { uow } = getStack().runtime;
    const scope = { workspaceId: a.workspace_id, userId: a.user_id };
    let error: unknown;
    try {
      await uow(scope, (m) =>
        m.query(`INSERT INTO nodes (workspace_id, type, name) VALUES ($1, 'x', 'planted')`, [b.workspace_id]),
      );
    } catch (caught) {
      error = caught;
    }
    expect(String(error)).to.match(/row-level security/);
    const [, updated] = await uow(scope, (m) =>
      m.query(`UPDATE nodes SET name = 'hijacked' WHERE workspace_id = $1`, [b.workspace_id]),
    );
    expect(updated).to.equal(0);
    const [, deleted] = await uow(scope, (m) =>
      m.query(`DELETE FROM events WHERE workspace_id = $1`, [b.workspace_id]),
    );
    expect(deleted).to.equal(0);
    const [{ count }] = await getStack().ownerDataSource.query(
      `SELECT count(*)::int AS count FROM nodes WHERE workspace_id = $1 AND name = 'hijacked'`,
      [b.workspace_id],
    );
    expect(count).to.equal(0);
  });

  it('the setting does not leak to the next user of a pooled connection', async () => {
    // One connection, so the second query certainly reuses the first transaction's session.
    await onOneConnection(async (single) => {
      const uow = createUnitOfWork(single);
      const inside = await uow({ workspaceId: a.workspace_id }, (m) => m.query(`SELECT count(*)::int AS n FROM nodes`));
      expect(inside[0].n).to.be.greaterThan(0);
      const after = await single.query(
        `SELECT current_setting('app.workspace_id', true) AS setting, (SELECT count(*)::int FROM nodes) AS n`,
      );
      expect(after[0]).to.deep.equal({ setting: '', n: 0 });
    });
  });

  it('a unit of work begun in one message rolls back whole; a non-hex scope value is bound, not inlined', async () => {
    await onOneConnection(async (single) => {
      const uow = createUnitOfWork(single);
      const scope = { workspaceId: a.workspace_id, userId: a.user_id };
      // A failure after a write takes the write back: the transaction began with the scope's message.
      const failed = await uow(scope, async (m) => {
        await m.query(`INSERT INTO nodes (workspace_id, type, name) VALUES ($1, 'x', 'rolled back')`, [a.workspace_id]);
        throw new Error('after the insert');
      }).catch((error: Error) => error);
      expect(failed).to.be.instanceOf(Error);
      const [{ n }] = await getStack().ownerDataSource.query(
        `SELECT count(*)::int AS n FROM nodes WHERE workspace_id = $1 AND name = 'rolled back'`,
        [a.workspace_id],
      );
      expect(n).to.equal(0);
      // A key hash is hex; anything else (here an injection attempt) takes the bound way and is only a value.
      const hostile = `'; DELETE FROM nodes; --`;
      const [setting] = await uow({ keyHash: hostile }, (m) =>
        m.query(`SELECT current_setting('app.key_hash') AS key_hash, current_setting('app.workspace_id') AS ws`),
      );
      expect(setting).to.deep.equal({ key_hash: hostile, ws: '' });
      const inside = await uow(scope, (m) => m.query(`SELECT count(*)::int AS n FROM nodes`));
      expect(inside[0].n).to.be.greaterThan(0);
    });
  });

  it('a unit of work’s settings last its transaction, are bound when not plain, never the scope’s own', async () => {
    await onOneConnection(async (single) => {
      const uow = createUnitOfWork(single);
      // pgvector defines its settings once the session loads it (here by the first vector value).
      await single.query(`SELECT '[1]'::vector`);
      const read = `SELECT current_setting('hnsw.ef_search') AS ef, current_setting('app.workspace_id') AS ws`;
      const settings = { 'hnsw.ef_search': '123' };
      expect(await uow({ workspaceId: a.workspace_id, settings }, (m) => m.query(read))).to.deep.equal([
        { ef: '123', ws: a.workspace_id },
      ]);
      // A value that cannot be written in as a literal goes the bound way (and Postgres refuses it as a number).
      const refused = await uow({ settings: { 'hnsw.ef_search': `1'; DROP TABLE nodes; --` } }, (m) => m.query(read))
        .then(() => undefined)
        .catch((error: Error) => error.message);
      expect(refused).to.match(/invalid value for parameter "hnsw.ef_search"/);
      const overriding = await uow(
        { workspaceId: a.workspace_id, settings: { 'app.workspace_id': b.workspace_id } },
        (m) => m.query(read),
      ).catch((error: Error) => error.message);
      expect(overriding).to.match(/not a setting a unit of work may set: app.workspace_id/);
      const [after] = await single.query(`SELECT current_setting('hnsw.ef_search') AS ef`);
      expect(after.ef).to.equal('40');
    });
  });

  it('a snapshot unit of work reads every statement as of its first: a commit in between is not seen', async () => {
    const node = await as(a.api_key).post('/v1/ontology/nodes', { type: 'thing', name: 'before' });
    const scope = { workspaceId: a.workspace_id, userId: a.user_id };
    const uow = getStack().runtime.uow;
    const rename = (name: string) =>
      getStack().ownerDataSource.query(`UPDATE nodes SET name = $2 WHERE id = $1`, [node.body.id, name]);
    const nameOf = async (m: EntityManager) =>
      (await m.query(`SELECT name FROM nodes WHERE id = $1`, [node.body.id]))[0].name as string;
    const read = (snapshot: boolean) =>
      uow({ ...scope, snapshot }, async (m) => {
        const first = await nameOf(m);
        await rename(`${first}!`);
        return [first, await nameOf(m)];
      });
    expect(await read(true)).to.deep.equal(['before', 'before']);
    // Without it, each statement sees what committed before it (READ COMMITTED).
    expect(await read(false)).to.deep.equal(['before!', 'before!!']);
  });

  it('the one-statement authentication lookups leave no setting behind on the connection', async () => {
    await onOneConnection(async (single) => {
      await single.query(`SELECT * FROM weft_authenticate_key($1)`, ['0'.repeat(64)]);
      await single.query(`SELECT * FROM weft_authenticate_user($1, NULL, NULL, gen_random_uuid())`, [a.user_id]);
      const [after] = await single.query(
        `SELECT current_setting('app.key_hash', true) AS key_hash, current_setting('app.user_id', true) AS user_id,
                (SELECT count(*)::int FROM api_keys) AS keys, (SELECT count(*)::int FROM memberships) AS memberships`,
      );
      expect(after).to.deep.equal({ key_hash: '', user_id: '', keys: 0, memberships: 0 });
    });
  });

  it('a one-statement scoped read sees only its workspace and leaves no setting behind', async () => {
    await onOneConnection(async (single) => {
      const read = createScopedRead(single);
      const rows = await read<{ workspace_id: string }>(
        { workspaceId: a.workspace_id },
        `SELECT workspace_id FROM nodes`,
      );
      expect(rows.length).to.be.greaterThan(0);
      expect(rows.every((row) => row.workspace_id === a.workspace_id)).to.equal(true);
      const asked = await read({ workspaceId: a.workspace_id }, `SELECT id FROM nodes WHERE workspace_id = $1::uuid`, [
        b.workspace_id,
      ]);
      expect(asked).to.deep.equal([]);
      const [after] = await single.query(
        `SELECT current_setting('app.workspace_id', true) AS setting, (SELECT count(*)::int FROM nodes) AS n`,
      );
      expect(after).to.deep.equal({ setting: '', n: 0 });
    });
  });

  it("one user's credentials are invisible to another user, whatever the workspace", async () => {
    const { uow } = getStack().runtime;
    const keys: { user_id: string }[] = await uow({ workspaceId: b.workspace_id, userId: a.user_id }, (m) =>
      m.query(`SELECT * FROM api_keys`),
    );
    expect(keys.length).to.be.greaterThan(0);
    expect(keys.every((key) => key.user_id === a.user_id)).to.equal(true);
  });

  describe('what the application role may do on its own (an attacker with its connection)', () => {
    /** The error a statement raises through the app role, or undefined when it succeeds. */
    async function refusal(sql: string, params: unknown[] = [], scope?: { workspaceId?: string; userId?: string }) {
      const { runtime } = getStack();
      try {
        await (scope ? runtime.uow(scope, (m) => m.query(sql, params)) : runtime.dataSource.query(sql, params));
        return undefined;
      } catch (error) {
        return String(error);
      }
    }

    it('cannot insert its user into another workspace, nor move a membership there', async () => {
      const own = { workspaceId: a.workspace_id, userId: a.user_id };
      const insert = `INSERT INTO memberships (workspace_id, user_id, role) VALUES ($1, $2, 'owner')`;
      expect(await refusal(insert, [b.workspace_id, a.user_id], own)).to.match(/row-level security/);
      expect(await refusal(insert, [b.workspace_id, a.user_id], { userId: a.user_id })).to.match(/row-level security/);
      const move = `UPDATE memberships SET workspace_id = $1 WHERE user_id = $2`;
      expect(await refusal(move, [b.workspace_id, a.user_id], own)).to.match(/row-level security/);
      const [{ n }] = await getStack().ownerDataSource.query(
        `SELECT count(*)::int AS n FROM memberships WHERE workspace_id = $1 AND user_id = $2`,
        [b.workspace_id, a.user_id],
      );
      expect(n).to.equal(0);
    });

    it('cannot create, change or delete tenants, workspaces or users, nor read users', async () => {
      for (const sql of [
        `INSERT INTO tenants (name, credit_balance) VALUES ('free money', 1000000)`,
        `UPDATE tenants SET locked = false, name = 'mine'`,
        `DELETE FROM tenants WHERE false`,
        `INSERT INTO workspaces (tenant_id, name) SELECT id, 'planted' FROM tenants LIMIT 1`,
        `UPDATE workspaces SET tenant_id = tenant_id`,
        `DELETE FROM workspaces WHERE false`,
        `INSERT INTO users (display_name) VALUES ('intruder')`,
        `SELECT email FROM users`,
        `TRUNCATE users CASCADE`,
      ]) {
        expect(await refusal(sql), sql).to.match(/permission denied/);
      }
    });

    it('cannot touch the migrations table or un-revoke a token, but may read what authentication needs', async () => {
      for (const sql of [
        `SELECT * FROM typeorm_migrations`,
        `DELETE FROM typeorm_migrations`,
        `DELETE FROM revoked_tokens`,
        `INSERT INTO revoked_tokens (jti, expires_at) VALUES (gen_random_uuid(), now())`,
      ]) {
        expect(await refusal(sql), sql).to.match(/permission denied/);
      }
      // What the code does need: reading tenants and workspaces, moving a balance, reading revocations.
      expect(await refusal(`SELECT id, credit_balance, locked FROM tenants LIMIT 1`)).to.equal(undefined);
      expect(await refusal(`SELECT id, tenant_id FROM workspaces LIMIT 1`)).to.equal(undefined);
      expect(await refusal(`UPDATE tenants SET credit_balance = credit_balance WHERE id = $1`, [a.tenant_id])).to.equal(
        undefined,
      );
      expect(await refusal(`SELECT count(*) FROM revoked_tokens`)).to.equal(undefined);
    });

    it('the outbox sweeper’s definer function is executable by the app role only, not by PUBLIC', async () => {
      const grants: { grantee: string; privilege: string }[] = await getStack().ownerDataSource.query(
        `SELECT CASE WHEN a.grantee = 0 THEN 'PUBLIC' ELSE pg_get_userbyid(a.grantee)::text END AS grantee,
                a.privilege_type AS privilege
         FROM pg_proc p, aclexplode(p.proacl) a WHERE p.proname = 'weft_outbox_pending_workspaces'`,
      );
      const app = new URL(getStack().config.DATABASE_URL).username;
      expect(grants.map((grant) => grant.grantee)).not.to.include('PUBLIC');
      expect(grants).to.deep.include({ grantee: app, privilege: 'EXECUTE' });
      expect(await refusal(`SELECT * FROM weft_outbox_pending_workspaces(interval '0')`)).to.equal(undefined);
    });
  });
});
