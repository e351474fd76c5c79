import { Client } from 'pg';
import { startClusterProcess } from '../../scripts/cluster/cluster';
import { clusterAddress, clusterSettings } from '../../scripts/cluster/layout';
import { runningPid, stopProcess } from '../../scripts/cluster/processes';

/**
 * The multi-process Temporal cluster of `npm run cluster` as the cluster tier (`npm run test:cluster`) sees it:
 * its processes by name, faults on them by pid, and its shard table, to tell whether shards changed owner.
 */
export const CLUSTER = clusterSettings();

export const clusterTemporalAddress = () => clusterAddress(CLUSTER);

/** SIGKILLs a process of the cluster (`history-2`): no drain, no goodbye to the membership ring. */
export async function killClusterProcess(name: string): Promise<number> {
  const pid = await stopProcess(CLUSTER, name, 'SIGKILL');
  if (pid === undefined) throw new Error(`${name} was not running`);
  return pid;
}

/** Stops a process as an orchestrator would (SIGTERM, its graceful shutdown) and starts a new one. */
export async function restartClusterProcess(name: string): Promise<{ stopped: number; started: number }> {
  const stopped = await stopProcess(CLUSTER, name, 'SIGTERM');
  if (stopped === undefined) throw new Error(`${name} was not running`);
  return { stopped, started: await startClusterProcess(CLUSTER, name) };
}

export const startClusterProcessAgain = (name: string) => startClusterProcess(CLUSTER, name);
export const clusterPid = (name: string) => runningPid(CLUSTER, name);

/**
 * Each history shard's range id: a host that takes a shard over bumps it (so it fences the previous owner's
 * writes), and nothing else moves it in a short test, so a shard whose range id grew changed owner.
 */
export async function shardRanges(): Promise<Map<number, number>> {
  const url = new URL(CLUSTER.adminUrl);
  url.pathname = `/${CLUSTER.database}`;
  const client = new Client({ connectionString: url.toString() });
  await client.connect();
  try {
    const { rows } = await client.query<{ shard_id: number; range_id: string }>(
      'SELECT shard_id, range_id FROM shards',
    );
    return new Map(rows.map((row) => [row.shard_id, Number(row.range_id)]));
  } finally {
    await client.end();
  }
}

/** Shards whose range id grew between two readings. */
export const movedShards = (before: Map<number, number>, after: Map<number, number>) =>
  [...after].filter(([shard, range]) => range > (before.get(shard) ?? 0)).map(([shard]) => shard);
