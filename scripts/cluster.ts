import { clusterStatus, downCluster, upCluster } from './cluster/cluster';
import { clusterAddress, clusterSettings } from './cluster/layout';

/**
 * `npm run cluster` starts a multi-process Temporal cluster on this machine's Postgres (docs/scale-out.md):
 * `npm run cluster` (or `-- up`) builds, sets up and starts it; `-- down` stops it (its state stays in
 * Postgres); `-- status` lists the processes. Then: TEMPORAL_ADDRESS=<the address it prints> npm start.
 */
const log = (line: string) => process.stderr.write(`[cluster] ${line}\n`);

async function main(command = 'up') {
  const settings = clusterSettings();
  if (command === 'up') {
    const started = Date.now();
    await upCluster(settings, log);
    for (const line of clusterStatus(settings)) log(line);
    log(`ready in ${((Date.now() - started) / 1000).toFixed(1)} s: TEMPORAL_ADDRESS=${clusterAddress(settings)}`);
  } else if (command === 'down') {
    await downCluster(settings, log);
  } else if (command === 'status') {
    for (const line of clusterStatus(settings)) process.stdout.write(`${line}\n`);
  } else {
    throw new Error(`unknown command ${command}: up, down or status`);
  }
}

main(process.argv[2]).catch((error: unknown) => {
  log(error instanceof Error ? error.message : String(error));
  process.exit(1);
});
