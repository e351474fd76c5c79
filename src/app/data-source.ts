import { migrations } from '../../migrations';
import type { Config } from '../platform/config';
import type { PoolConfig, PoolRole } from '../platform/db/data-source';
import * as platform from '../platform/db/data-source';
import { entities } from './entities';

/** The application's data source (RLS-bound role) over every feature's entities. */
export const createAppDataSource = (config: PoolConfig, role: PoolRole = 'api') =>
  platform.createAppDataSource({ entities }, config, role);

/** The schema owner's data source, with every migration. Never used to serve requests. */
export const createMigrationDataSource = (config: Pick<Config, 'DATABASE_OWNER_URL'>) =>
  platform.createMigrationDataSource({ entities, migrations }, config);
