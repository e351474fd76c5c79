import { readFileSync } from 'node:fs';
import path from 'node:path';

/**
 * `npm run cluster`'s shape: which Temporal services run as which processes on which ports, and the
 * environment each process renders the shared server config with (deploy/temporal/config/weft.yaml).
 */
export const ROOT = path.resolve(__dirname, '../..');
export const TEMPORAL_DEPLOY_DIR = path.join(ROOT, 'deploy/temporal');

export type TemporalService = 'frontend' | 'history' | 'matching' | 'worker';

export interface ClusterProcess {
  /** The process's name: its pid file, its log, what a test kills (`history-2`). */
  name: string;
  service: TemporalService;
  grpcPort: number;
  membershipPort: number;
}

export interface ClusterSettings {
  /** Pid files and logs; the cluster's state itself lives in Postgres. */
  stateDir: string;
  host: string;
  /** The frontend's gRPC port, TEMPORAL_ADDRESS's; the other ports are offsets from it. */
  port: number;
  shards: number;
  database: string;
  visibilityDatabase: string;
  postgresHost: string;
  postgresPort: number;
  /** The superuser's URL, to create the `temporal` role once. */
  adminUrl: string;
  namespace: string;
  /** Connections each process may hold to the persistence and to the visibility database. */
  sqlConnections: number;
  visibilityConnections: number;
}

export function clusterSettings(env: NodeJS.ProcessEnv = process.env): ClusterSettings {
  const database = env.TEMPORAL_CLUSTER_DATABASE || 'temporal';
  return {
    stateDir: path.resolve(env.TEMPORAL_CLUSTER_DIR || path.join(ROOT, '.data/temporal-cluster')),
    host: '127.0.0.1',
    port: Number(env.TEMPORAL_CLUSTER_PORT || 17233),
    // A fixed property of a cluster: changing it later means new databases (docs/scale-out.md).
    shards: Number(env.TEMPORAL_CLUSTER_SHARDS || 16),
    database,
    visibilityDatabase: `${database}_visibility`,
    postgresHost: env.TEMPORAL_CLUSTER_POSTGRES_HOST || '127.0.0.1',
    postgresPort: Number(env.TEMPORAL_CLUSTER_POSTGRES_PORT || 5432),
    adminUrl: env.DATABASE_ADMIN_URL || 'postgres://postgres@127.0.0.1:5432/postgres',
    namespace: env.TEMPORAL_NAMESPACE || 'default',
    // Six processes share the machine's Postgres (max_connections 100 here) with Weft and its tests: 6 × 7 at most.
    sqlConnections: Number(env.TEMPORAL_CLUSTER_SQL_CONNS || 5),
    visibilityConnections: Number(env.TEMPORAL_CLUSTER_VISIBILITY_CONNS || 2),
  };
}

export const clusterAddress = (settings: ClusterSettings) => `${settings.host}:${settings.port}`;

/**
 * Frontend, two history hosts, two matching hosts, the internal worker: six processes. A second host of a
 * service sits 10 ports above the first; membership (ringpop) ports are 100 above the gRPC ones.
 */
export function clusterProcesses(settings: ClusterSettings): ClusterProcess[] {
  const p = settings.port;
  const process = (name: string, service: TemporalService, offset: number): ClusterProcess => ({
    name,
    service,
    grpcPort: p + offset,
    membershipPort: p + 100 + offset,
  });
  return [
    process('history-1', 'history', 1),
    process('history-2', 'history', 11),
    process('matching-1', 'matching', 2),
    process('matching-2', 'matching', 12),
    process('frontend', 'frontend', 0),
    process('worker', 'worker', 6),
  ];
}

/** The frontend's HTTP port (10 above its gRPC port, like Temporal's 7233/7243). */
export const frontendHttpPort = (settings: ClusterSettings) => settings.port + 10;

/** `KEY=value` lines of deploy/temporal/versions.env, the Temporal release both compose and this script run. */
export function temporalVersions(): Record<string, string> {
  const text = readFileSync(path.join(TEMPORAL_DEPLOY_DIR, 'versions.env'), 'utf8');
  const pairs = text
    .split('\n')
    .map((line) => /^([A-Z_]+)=(\S+)$/.exec(line.trim()))
    .filter((match): match is RegExpExecArray => match !== null)
    .map((match) => [match[1]!, match[2]!] as const);
  return Object.fromEntries(pairs);
}

/**
 * The variables deploy/temporal/config/weft.yaml reads, for one process: the cluster's (the same names
 * docker-compose.yml's temporal service sets) and the ports of its own service.
 */
export function processEnvironment(settings: ClusterSettings, target: ClusterProcess): Record<string, string> {
  const env: Record<string, string> = {
    DB: 'postgres12',
    POSTGRES_SEEDS: settings.postgresHost,
    DB_PORT: String(settings.postgresPort),
    POSTGRES_USER: 'temporal',
    POSTGRES_PWD: '',
    DBNAME: settings.database,
    VISIBILITY_DBNAME: settings.visibilityDatabase,
    NUM_HISTORY_SHARDS: String(settings.shards),
    SQL_MAX_CONNS: String(settings.sqlConnections),
    SQL_VIS_MAX_CONNS: String(settings.visibilityConnections),
    DYNAMIC_CONFIG_FILE_PATH: path.join(TEMPORAL_DEPLOY_DIR, 'dynamic-config.yaml'),
    BIND_ON_IP: settings.host,
    TEMPORAL_BROADCAST_ADDRESS: settings.host,
    LOG_LEVEL: 'warn',
    FRONTEND_HTTP_PORT: String(frontendHttpPort(settings)),
  };
  // Every service's first host's ports (a process reads the frontend's, say, to reach it), then its own.
  for (const each of clusterProcesses(settings).filter((candidate) =>
    candidate.name.match(/-1$|^frontend$|^worker$/),
  )) {
    env[`${each.service.toUpperCase()}_GRPC_PORT`] = String(each.grpcPort);
    env[`${each.service.toUpperCase()}_MEMBERSHIP_PORT`] = String(each.membershipPort);
  }
  env[`${target.service.toUpperCase()}_GRPC_PORT`] = String(target.grpcPort);
  env[`${target.service.toUpperCase()}_MEMBERSHIP_PORT`] = String(target.membershipPort);
  return env;
}
