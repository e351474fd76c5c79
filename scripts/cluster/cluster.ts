import { execFile } from 'node:child_process';
import path from 'node:path';
import { promisify } from 'node:util';
import { Client } from 'pg';
import { temporalCliPath } from '../../src/platform/temporal/dev-server';
import type { TemporalBinaries } from './build';
import { ensureTemporalBinaries, temporalModuleDir } from './build';
import type { ClusterSettings } from './layout';
import { clusterAddress, clusterProcesses, TEMPORAL_DEPLOY_DIR, temporalVersions } from './layout';
import { runningPid, startProcess, stopProcess, waitListening } from './processes';

/**
 * A multi-process Temporal cluster on the machine's Postgres (`npm run cluster`): the server built from the
 * release deploy/temporal/versions.env names, its schemas set up by the same script compose runs, one config
 * (deploy/temporal/config/weft.yaml), and the namespace with Weft's search attributes. Every step is
 * idempotent: a running cluster passes through in a second or two, a stopped one starts on its old state.
 */
const run = promisify(execFile);
type Log = (line: string) => void;

export function binaries(log: Log = () => {}): TemporalBinaries {
  return ensureTemporalBinaries(temporalVersions().TEMPORAL_SERVER_VERSION!, log);
}

/** The `temporal` role (as compose's temporal-role job makes it), then both databases and their schemas. */
async function ensureSchemas(settings: ClusterSettings, sqlTool: string, log: Log) {
  const admin = new Client({ connectionString: settings.adminUrl });
  await admin.connect();
  try {
    await admin.query(`DO $$ BEGIN
      IF NOT EXISTS (SELECT FROM pg_roles WHERE rolname = 'temporal') THEN CREATE ROLE temporal LOGIN CREATEDB; END IF;
    END $$`);
  } finally {
    await admin.end();
  }
  const versions = temporalVersions();
  const moduleDir = temporalModuleDir(versions.TEMPORAL_SERVER_VERSION!);
  await run('sh', [path.join(TEMPORAL_DEPLOY_DIR, 'setup-schema.sh')], {
    env: {
      ...process.env,
      SQL_HOST: settings.postgresHost,
      SQL_PORT: String(settings.postgresPort),
      SQL_USER: 'temporal',
      SQL_PASSWORD: '',
      TEMPORAL_SQL_TOOL: sqlTool,
      TEMPORAL_SCHEMA_DIR: path.join(moduleDir, 'schema/postgresql/v12'),
      DBNAME: settings.database,
      VISIBILITY_DBNAME: settings.visibilityDatabase,
    },
  });
  log(
    `schemas at ${versions.TEMPORAL_SCHEMA_VERSION} in ${settings.database} and ` +
      `${versions.TEMPORAL_VISIBILITY_SCHEMA_VERSION} in ${settings.visibilityDatabase}`,
  );
}

/** deploy/temporal/namespace.sh with the machine's CLI, retried while the services find each other. */
async function ensureNamespace(settings: ClusterSettings, log: Log) {
  const env = {
    ...process.env,
    TEMPORAL_CLI: temporalCliPath(),
    TEMPORAL_ADDRESS: clusterAddress(settings),
    TEMPORAL_NAMESPACE: settings.namespace,
  };
  const deadline = Date.now() + 90_000;
  for (;;) {
    try {
      await run('sh', [path.join(TEMPORAL_DEPLOY_DIR, 'namespace.sh')], { env });
      log(`namespace ${settings.namespace} and Weft's search attributes registered`);
      return;
    } catch (error) {
      if (Date.now() > deadline) throw error;
      await new Promise((resolve) => setTimeout(resolve, 1000));
    }
  }
}

/** Builds (once), sets up (idempotently) and starts whatever of the cluster is not running. */
export async function upCluster(settings: ClusterSettings, log: Log = () => {}): Promise<void> {
  const { server, sqlTool } = binaries(log);
  await ensureSchemas(settings, sqlTool, log);
  const [first, ...rest] = clusterProcesses(settings);
  // On new databases each process inserts the cluster's metadata row at start: started together, all but one
  // meet a duplicate key and exit. The first one writes it alone; the others start once it listens.
  startProcess(settings, server, first!);
  await waitListening(settings, first!);
  for (const target of rest) startProcess(settings, server, target);
  for (const target of rest) await waitListening(settings, target);
  await ensureNamespace(settings, log);
}

/** Stops every process of the cluster: the worker and the frontend first, the history hosts last. */
export async function downCluster(settings: ClusterSettings, log: Log = () => {}): Promise<void> {
  for (const target of [...clusterProcesses(settings)].reverse()) {
    const pid = await stopProcess(settings, target.name);
    if (pid) log(`stopped ${target.name} (pid ${pid})`);
  }
}

/** Each process: its pid (or `stopped`) and its ports. */
export function clusterStatus(settings: ClusterSettings): string[] {
  return clusterProcesses(settings).map((target) => {
    const pid = runningPid(settings, target.name);
    const state = pid ? `pid ${pid}` : 'stopped';
    return `${target.name.padEnd(11)} ${state.padEnd(11)} grpc ${target.grpcPort} membership ${target.membershipPort}`;
  });
}

/** Starts one stopped (or killed) process again, as a supervisor would, and waits for its port. */
export async function startClusterProcess(settings: ClusterSettings, name: string): Promise<number> {
  const target = clusterProcesses(settings).find((candidate) => candidate.name === name);
  if (!target) throw new Error(`the cluster has no process ${name}`);
  const pid = startProcess(settings, binaries().server, target);
  await waitListening(settings, target);
  return pid;
}
