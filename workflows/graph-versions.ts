import { proxyActivities } from '@temporalio/workflow';
import type { Activities } from '../activities';
import type { VersionRetentionInput } from '../src/graph/workflow';
import { maintenanceActivity } from './activity-options';

const { purgeGraphVersions } = proxyActivities<Activities>(maintenanceActivity);

/** Scheduled daily: deletes graph versions past VERSION_RETENTION_DAYS (issue 31 part 5). */
export async function graphVersionRetentionWorkflow(input: VersionRetentionInput): Promise<{ deleted: number }> {
  return purgeGraphVersions(input);
}
