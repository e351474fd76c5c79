import { proxyActivities } from '@temporalio/workflow';
import type { Activities } from '../activities';
import type { FailureClusterInput, FailureClusterResult, SessionSweepResult } from '../src/agents/workflow';
import type { KeyPurgeInput, KeyPurgeResult } from '../src/capabilities/workflow';
import { databaseActivity, maintenanceActivity } from './activity-options';

const { clusterFailedSession } = proxyActivities<Activities>(databaseActivity);
const { expireStaleSessions, purgeIdempotencyKeys } = proxyActivities<Activities>(maintenanceActivity);

/**
 * `failure-cluster-<session_id>`, from the `agent.session_failed` outbox event: clustering runs
 * here, not in the request that ended the session.
 */
export async function failureClusterWorkflow(input: FailureClusterInput): Promise<FailureClusterResult> {
  return clusterFailedSession(input);
}

/** Scheduled every 30 s: expires sessions that missed their heartbeat and abandons their claims. */
export async function agentSessionSweepWorkflow(_input: Record<string, never>): Promise<SessionSweepResult> {
  return expireStaleSessions();
}

/** Scheduled hourly: deletes Idempotency-Keys past the 24-hour replay window, and stored code batches. */
export async function capabilityKeyPurgeWorkflow(input: KeyPurgeInput): Promise<KeyPurgeResult> {
  return purgeIdempotencyKeys(input);
}
