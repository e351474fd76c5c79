/**
 * Idempotent database set-up: roles, database, extensions, grants and migrations.
 * Run by scripts/setup.sh; `--test` prepares the test database instead.
 */
import { Client } from 'pg';
import { createMigrationDataSource } from '../src/app/data-source';
import { loadConfig, withDatabaseSuffix } from '../src/platform/config';

const quoteIdent = (name: string) => `"${name.replace(/"/g, '""')}"`;

async function main() {
  const env = process.argv.includes('--test')
    ? withDatabaseSuffix(process.env, '_test')
    : process.argv.includes('--bench')
      ? withDatabaseSuffix(process.env, '_bench')
      : process.env;
  const config = loadConfig(env);
  const app = new URL(config.DATABASE_URL);
  const owner = new URL(config.DATABASE_OWNER_URL);
  const appRole = decodeURIComponent(app.username);
  const ownerRole = decodeURIComponent(owner.username);
  const database = decodeURIComponent(app.pathname.slice(1));

  const admin = new Client({ connectionString: config.DATABASE_ADMIN_URL });
  await admin.connect();
  try {
    const roles = await admin.query<{ rolname: string }>(`SELECT rolname FROM pg_roles WHERE rolname = ANY($1)`, [
      [appRole, ownerRole],
    ]);
    const existing = new Set(roles.rows.map((row) => row.rolname));
    // The owner runs migrations and the definer functions; it bypasses RLS. The app role never does.
    if (!existing.has(ownerRole)) await admin.query(`CREATE ROLE ${quoteIdent(ownerRole)} LOGIN BYPASSRLS`);
    if (!existing.has(appRole)) await admin.query(`CREATE ROLE ${quoteIdent(appRole)} LOGIN NOSUPERUSER NOBYPASSRLS`);
    for (const [role, url] of [
      [ownerRole, owner],
      [appRole, app],
    ] as const) {
      if (url.password)
        await admin.query(
          `ALTER ROLE ${quoteIdent(role)} PASSWORD '${decodeURIComponent(url.password).replace(/'/g, "''")}'`,
        );
    }
    // Each test run starts from an empty database: maintenance workflows visit every workspace,
    // and a database that grew over earlier runs would make them slower run after run.
    if (process.argv.includes('--test'))
      await admin.query(`DROP DATABASE IF EXISTS ${quoteIdent(database)} WITH (FORCE)`);
    const db = await admin.query(`SELECT 1 FROM pg_database WHERE datname = $1`, [database]);
    if (db.rowCount === 0) await admin.query(`CREATE DATABASE ${quoteIdent(database)} OWNER ${quoteIdent(ownerRole)}`);
  } finally {
    await admin.end();
  }

  const adminUrl = new URL(config.DATABASE_ADMIN_URL);
  adminUrl.pathname = `/${database}`;
  const adminDb = new Client({ connectionString: adminUrl.toString() });
  await adminDb.connect();
  try {
    await adminDb.query(`
      CREATE EXTENSION IF NOT EXISTS vector;
      CREATE EXTENSION IF NOT EXISTS pg_trgm;
      CREATE EXTENSION IF NOT EXISTS unaccent;
      GRANT CONNECT ON DATABASE ${quoteIdent(database)} TO ${quoteIdent(appRole)};
      GRANT USAGE ON SCHEMA public TO ${quoteIdent(appRole)};
      ALTER DEFAULT PRIVILEGES FOR ROLE ${quoteIdent(ownerRole)} IN SCHEMA public
        GRANT SELECT, INSERT, UPDATE, DELETE ON TABLES TO ${quoteIdent(appRole)};
      ALTER DEFAULT PRIVILEGES FOR ROLE ${quoteIdent(ownerRole)} IN SCHEMA public
        GRANT USAGE, SELECT ON SEQUENCES TO ${quoteIdent(appRole)};`);
  } finally {
    await adminDb.end();
  }

  const migrationSource = createMigrationDataSource(config);
  await migrationSource.initialize();
  try {
    const applied = await migrationSource.runMigrations({ transaction: 'each' });
    for (const migration of applied) console.error(`[setup] applied migration ${migration.name}`);
  } finally {
    await migrationSource.destroy();
  }
}

main().catch((error) => {
  console.error('[setup] database preparation failed:', error instanceof Error ? error.message : error);
  process.exit(1);
});
