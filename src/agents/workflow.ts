import { defineWorkflow } from '../platform/temporal/contract';

/** The agent feature's workflow contracts. No I/O: the workflow bundle imports this file. */

export interface FailureClusterInput {
  workspaceId: string;
  sessionId: string;
}

export interface FailureClusterResult {
  /** False when the session had been counted already (a redelivered event). */
  clustered: boolean;
}

/**
 * `failure-cluster-<session_id>`, started from the `agent.session_failed` outbox event: counts the
 * session into the cluster of its normalised signature. A finished run is not repeated.
 */
export const failureClusterWorkflow = defineWorkflow<[FailureClusterInput], FailureClusterResult>({
  type: 'failureClusterWorkflow',
  id: (input) => `failure-cluster-${input.sessionId}`,
  workspaceId: (input) => input.workspaceId,
  idReusePolicy: 'ALLOW_DUPLICATE_FAILED_ONLY',
});

export interface SessionSweepResult {
  workspaces: number;
  expired: number;
  abandoned: number;
}

/**
 * Every 30 s (a schedule): expires sessions whose last heartbeat is older than
 * AGENT_SESSION_TTL_SECONDS and abandons their claims, in every workspace.
 */
export const agentSessionSweepWorkflow = defineWorkflow<[Record<string, never>], SessionSweepResult>({
  type: 'agentSessionSweepWorkflow',
  id: () => 'agent-session-sweep',
});
