import type { DataSource } from 'typeorm';
import type { Config } from '../platform/config';
import { metricsEndpoint } from './endpoint';
import type { MetricsSnapshot } from './snapshot';
import { createMetricsSnapshot } from './snapshot';

/**
 * Prometheus metrics (issue 29): the API's `GET /metrics`. The process-wide families (HTTP, pools,
 * Temporal client) live in src/platform/metrics/; this feature adds the database's cross-workspace
 * figures and the endpoint. A worker serves its own /metrics on WORKER_METRICS_PORT (workers/worker.ts).
 */
export const metricsFeature = {
  name: 'metrics',
  services: {
    metricsSnapshot: (ctx: { dataSource: DataSource }) => createMetricsSnapshot(ctx),
  },
  middleware: (runtime: { config: Pick<Config, 'METRICS_TOKEN'>; services: { metricsSnapshot: MetricsSnapshot } }) => [
    metricsEndpoint({ snapshot: runtime.services.metricsSnapshot, token: runtime.config.METRICS_TOKEN }),
  ],
};
