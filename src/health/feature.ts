import type { DataSource } from 'typeorm';
import type { TemporalHandle } from '../platform/temporal/connection';
import { healthRoutes } from './routes';

/** Liveness and readiness. See src/app/feature.ts for what a manifest may declare. */
export const healthFeature = {
  name: 'health',
  tags: {
    health: 'Liveness and readiness of the process and its dependencies.',
  },
  routes: (runtime: { dataSource: DataSource; temporal: TemporalHandle }) => healthRoutes(runtime),
};
