/** The inputs and result of the sweeps that schedules start (their contracts live beside each feature). */

export interface WorkspaceSweepInput {
  /** Resume after this workspace id (set by continue-as-new). */
  after?: string | null;
  batchSize?: number;
  /** Workspaces that failed in earlier runs of the same pass (carried over continue-as-new). */
  failed?: number;
}

export interface WorkspaceSweepResult {
  workspaces: number;
  /** Workspaces whose work failed and was skipped (logged by the activity). */
  failed: number;
}

export interface SweepInput {
  /** Rows younger than this belong to the fast path. */
  minAgeSeconds: number;
}
