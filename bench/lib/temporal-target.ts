import { downCluster, upCluster } from '../../scripts/cluster/cluster';
import { clusterAddress, clusterProcesses, clusterSettings } from '../../scripts/cluster/layout';
import { runningPid, stopProcess } from '../../scripts/cluster/processes';
import { stringOption } from './measure';
import type { ExternalTemporal } from './servers';

/**
 * Which Temporal a bench runs on (`--temporal dev|cluster|both`, dev by default): the bench's private dev
 * server, or the multi-process cluster of `npm run cluster` (issue 44), brought up with the same code as the
 * cluster tier and left as the bench found it.
 */
export type TemporalKind = 'dev' | 'cluster';

export function temporalKinds(args: readonly string[]): TemporalKind[] {
  const chosen = stringOption(args, 'temporal') ?? 'dev';
  if (chosen === 'both') return ['dev', 'cluster'];
  if (chosen === 'dev' || chosen === 'cluster') return [chosen];
  throw new Error(`--temporal ${chosen}: dev, cluster or both`);
}

export interface ClusterUse extends ExternalTemporal {
  /** Stops the processes this bench started (all of them: `npm run cluster -- down`; none if it was up). */
  release(): Promise<void>;
}

/** Brings the cluster up (builds it once, sets it up, starts what is not running) and notes what was running. */
export async function useCluster(log: (line: string) => void): Promise<ClusterUse> {
  const settings = clusterSettings();
  const processes = clusterProcesses(settings);
  const running = new Set(processes.filter((each) => runningPid(settings, each.name)).map((each) => each.name));
  const started = Date.now();
  await upCluster(settings, (line) => log(`[cluster] ${line}`));
  log(`[cluster] up in ${((Date.now() - started) / 1000).toFixed(0)} s at ${clusterAddress(settings)}`);
  return {
    address: clusterAddress(settings),
    databases: [settings.database, settings.visibilityDatabase],
    pids: () => processes.map((each) => runningPid(settings, each.name)).filter((pid): pid is number => !!pid),
    async release() {
      if (running.size === 0) {
        await downCluster(settings, (line) => log(`[cluster] ${line}`));
        return;
      }
      for (const each of processes) if (!running.has(each.name)) await stopProcess(settings, each.name);
    },
  };
}
