import 'reflect-metadata';
import type { DataSourceOptions } from 'typeorm';
import { DataSource } from 'typeorm';
import type { Config } from '../config';

/** The entity classes and migrations a data source knows: the composition wing passes the lists. */
export interface Schema {
  entities: NonNullable<DataSourceOptions['entities']>;
  migrations: NonNullable<DataSourceOptions['migrations']>;
}

/** Which part of the process a pool serves: with WEFT_PROCESS=all each has its own, so neither starves the other. */
export type PoolRole = 'api' | 'worker';

export type PoolConfig = Pick<
  Config,
  | 'DATABASE_URL'
  | 'DATABASE_POOL_SIZE'
  | 'DATABASE_WORKER_POOL_SIZE'
  | 'DATABASE_STATEMENT_TIMEOUT_MS'
  | 'DATABASE_WORKER_STATEMENT_TIMEOUT_MS'
  | 'DATABASE_IDLE_IN_TRANSACTION_TIMEOUT_MS'
  | 'DATABASE_ACQUIRE_TIMEOUT_MS'
>;

/**
 * The application's data source: the non-owner role, so every query is subject to RLS. Each
 * connection starts with the role's statement and idle-in-transaction timeouts (startup
 * parameters, so no statement can forget them); waiting for a connection is bounded too.
 */
export function createAppDataSource(
  schema: Pick<Schema, 'entities'>,
  config: PoolConfig,
  role: PoolRole = 'api',
): DataSource {
  const worker = role === 'worker';
  return new DataSource({
    type: 'postgres',
    url: config.DATABASE_URL,
    entities: schema.entities,
    synchronize: false,
    migrationsRun: false,
    poolSize: worker ? config.DATABASE_WORKER_POOL_SIZE : config.DATABASE_POOL_SIZE,
    applicationName: worker ? 'weft-worker' : 'weft',
    extra: {
      statement_timeout: worker ? config.DATABASE_WORKER_STATEMENT_TIMEOUT_MS : config.DATABASE_STATEMENT_TIMEOUT_MS,
      idle_in_transaction_session_timeout: config.DATABASE_IDLE_IN_TRANSACTION_TIMEOUT_MS,
      // pg-pool applies this to a checkout from a full pool as well as to opening a connection.
      connectionTimeoutMillis: config.DATABASE_ACQUIRE_TIMEOUT_MS,
    },
  });
}

/** The migration data source: the role that owns the schema. Never used to serve requests. */
export function createMigrationDataSource(schema: Schema, config: Pick<Config, 'DATABASE_OWNER_URL'>): DataSource {
  return new DataSource({
    type: 'postgres',
    url: config.DATABASE_OWNER_URL,
    entities: schema.entities,
    migrations: schema.migrations,
    migrationsTableName: 'typeorm_migrations',
    synchronize: false,
    applicationName: 'weft-migrations',
  });
}
