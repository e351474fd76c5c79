import 'reflect-metadata';
import { DataSource } from 'typeorm';
import { migrations } from '../../../migrations';
import type { Config } from '../config';
import { entities } from './entities';

/** The application's data source: the non-owner role, so every query is subject to RLS. */
export function createAppDataSource(config: Pick<Config, 'DATABASE_URL' | 'DATABASE_POOL_SIZE'>): DataSource {
  return new DataSource({
    type: 'postgres',
    url: config.DATABASE_URL,
    entities,
    synchronize: false,
    migrationsRun: false,
    poolSize: config.DATABASE_POOL_SIZE,
    applicationName: 'weft',
  });
}

/** The migration data source: the role that owns the schema. Never used to serve requests. */
export function createMigrationDataSource(config: Pick<Config, 'DATABASE_OWNER_URL'>): DataSource {
  return new DataSource({
    type: 'postgres',
    url: config.DATABASE_OWNER_URL,
    entities,
    migrations,
    migrationsTableName: 'typeorm_migrations',
    synchronize: false,
    applicationName: 'weft-migrations',
  });
}
