// Issue 41: a run keeps the versions of its workspace's connectors it started with. They are taken
// as the run is dispatched (`execution-repository.ts`, a child run takes its parent's) and every lookup
// of a connector's tool for the run (its steps' calls and approvals, the llm agent's tool list) passes
// them, so a refresh that changed a schema meanwhile does not change what the run validates or sees.
import type { ToolPins } from '../capabilities/define';
import type { ConnectorPinsRow, RunExecution } from './entities';

/** The run's pins for the capability layer; undefined (the current versions) for a run from before them. */
export function pinsOf(run: Pick<RunExecution, 'connectorVersions'>): ToolPins | undefined {
  const pinned = run.connectorVersions;
  if (!pinned) return undefined;
  return Object.fromEntries(Object.entries(pinned).map(([id, entry]) => [id, entry.version]));
}

/** The run's pins as `GET /v1/runs/{id}` shows them, by connector name. */
export const pinnedView = (pinned: ConnectorPinsRow | null) =>
  pinned === null
    ? null
    : Object.entries(pinned)
        .map(([id, entry]) => ({ connector_id: id, name: entry.name, version: entry.version }))
        .sort((a, b) => a.name.localeCompare(b.name));
