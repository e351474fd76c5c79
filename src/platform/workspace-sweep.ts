import { isTransient } from './transient';

/** Where a sweep stands, as a heartbeat's details: the workspace, how many are done, how many failed. */
export type SweepProgress = Record<string, string | number>;

export interface WorkspaceSweep {
  /** Names the pass in the log line of a skipped workspace. */
  job: string;
  /**
   * The workspaces to visit, a page at a time: the ids after `after` (null: from the first) in id
   * order. An empty page ends the sweep; `onePage` turns a fixed list into a page.
   */
  page: (after: string | null) => Promise<string[]>;
  /** Where the sweep starts (null or unset: the first workspace). */
  after?: string | null;
  /** Visits the first page only: an activity that is one batch of a longer pass. */
  onePageOnly?: boolean;
  /** Beats with the progress after each workspace, at each `report`, and every `heartbeatEveryMs` while one runs. */
  heartbeat?: (progress: SweepProgress) => void;
  heartbeatEveryMs?: number;
  /** Where a skipped workspace is logged (pino's argument order). */
  warn: (fields: Record<string, unknown>, message: string) => void;
}

export interface SweepResult {
  visited: number;
  /** Workspaces whose work failed (logged and skipped); the next pass tries them again. */
  failed: number;
  /** The last workspace visited; null when there was none. */
  last: string | null;
}

/** A fixed list of workspaces as the one page of a sweep. */
export const onePage =
  (load: () => Promise<string[]>) =>
  (after: string | null): Promise<string[]> =>
    after === null ? load() : Promise.resolve([]);

/**
 * The one way a maintenance pass visits every workspace, each workspace's work in its own unit(s)
 * of work, with one failure rule: a transient failure (Postgres or Temporal unavailable, see
 * transient.ts) ends the sweep, so the activity is retried once they are back; any other failure
 * is that workspace's own, and is logged, counted and skipped, so one bad workspace cannot keep
 * every workspace after it from its pass, nor have the whole pass retried.
 */
export async function forEachWorkspace(
  sweep: WorkspaceSweep,
  work: (workspaceId: string, report: (progress: SweepProgress) => void) => Promise<unknown>,
): Promise<SweepResult> {
  const beat = sweep.heartbeat ?? (() => {});
  let after = sweep.after ?? null;
  let visited = 0;
  let failed = 0;
  for (;;) {
    const ids = await sweep.page(after);
    if (ids.length === 0) break;
    for (const workspaceId of ids) {
      let details: SweepProgress = { workspace: workspaceId, done: visited, failed };
      const report = (progress: SweepProgress) => {
        details = { ...details, ...progress };
        beat(details);
      };
      const timer = sweep.heartbeatEveryMs ? setInterval(() => beat(details), sweep.heartbeatEveryMs) : undefined;
      try {
        await work(workspaceId, report);
      } catch (error) {
        if (isTransient(error)) throw error;
        failed += 1;
        sweep.warn(
          { err: error, workspace_id: workspaceId },
          `${sweep.job} failed in a workspace; skipped until the next pass`,
        );
      } finally {
        clearInterval(timer);
      }
      visited += 1;
      after = workspaceId;
      beat({ done: visited, failed });
    }
    if (sweep.onePageOnly) break;
  }
  return { visited, failed, last: visited > 0 ? after : null };
}
