import { heartbeat } from '@temporalio/activity';
import type { VersionService } from '../src/graph/versions-service';
import type { VersionRetentionInput } from '../src/graph/workflow';

/** The graph versions' retention: a thin adapter over the purge. */
export function createGraphVersionActivities(deps: { services: { versions: VersionService } }) {
  return {
    /** Deletes versions older than the retention, batch by batch. */
    purgeGraphVersions: (input: VersionRetentionInput) =>
      deps.services.versions.purge(input.batchSize, () => heartbeat()),
  };
}
