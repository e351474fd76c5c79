import { defineWorkflow } from '../platform/temporal/contract';

export interface VersionRetentionInput {
  /** Versions deleted per transaction (default VERSION_RETENTION.purgeBatch). */
  batchSize?: number;
}

/** Daily (a schedule): deletes graph versions older than VERSION_RETENTION_DAYS, in every workspace. */
export const graphVersionRetentionWorkflow = defineWorkflow<[VersionRetentionInput], { deleted: number }>({
  type: 'graphVersionRetentionWorkflow',
  id: () => 'graph-version-retention',
  summary: () => 'Delete graph versions past retention',
});
