import type { ActivityOptions } from '@temporalio/workflow';

/** Named presets, so each workflow states intent rather than numbers. */
export const databaseActivity: ActivityOptions = {
  startToCloseTimeout: '1 minute',
  retry: { initialInterval: '500ms', backoffCoefficient: 2, maximumInterval: '30s', maximumAttempts: 10 },
};

export const maintenanceActivity: ActivityOptions = {
  startToCloseTimeout: '10 minutes',
  heartbeatTimeout: '1 minute',
  retry: { initialInterval: '5s', backoffCoefficient: 2, maximumInterval: '5 minutes', maximumAttempts: 5 },
};
