import type { ChildProcess } from 'node:child_process';
import { execFileSync, spawn } from 'node:child_process';
import { existsSync, mkdirSync } from 'node:fs';
import net from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { CUSTOM_SEARCH_ATTRIBUTES, devServerTypeName } from './search-attributes';

/** True when something accepts TCP connections at `host:port`. */
export function isListening(address: string, timeoutMs = 500): Promise<boolean> {
  const { host, port } = splitAddress(address);
  return new Promise((resolve) => {
    const socket = net.connect({ host, port });
    const done = (ok: boolean) => {
      socket.destroy();
      resolve(ok);
    };
    socket.setTimeout(timeoutMs, () => done(false));
    socket.once('connect', () => done(true));
    socket.once('error', () => done(false));
  });
}

/** A TCP port that was free a moment ago on loopback (for a server of a test's or a bench's own). */
export function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const server = net.createServer();
    server.once('error', reject);
    server.listen(0, '127.0.0.1', () => {
      const { port } = server.address() as net.AddressInfo;
      server.close(() => resolve(port));
    });
  });
}

export function splitAddress(address: string): { host: string; port: number } {
  const index = address.lastIndexOf(':');
  return { host: address.slice(0, index) || '127.0.0.1', port: Number(address.slice(index + 1)) };
}

/** The CLI that set-up built with `go install`: $TEMPORAL_CLI, else PATH, else the Go bin directory. */
export function temporalCliPath(): string {
  if (process.env.TEMPORAL_CLI) return process.env.TEMPORAL_CLI;
  for (const dir of (process.env.PATH ?? '').split(path.delimiter)) {
    const candidate = path.join(dir, 'temporal');
    if (dir && existsSync(candidate)) return candidate;
  }
  // Go's default GOPATH first, so that finding the CLI does not depend on `go` being on PATH.
  const usual = path.join(os.homedir(), 'go', 'bin', 'temporal');
  if (existsSync(usual)) return usual;
  const go = existsSync('/usr/local/go/bin/go') ? '/usr/local/go/bin/go' : 'go';
  const gobin = execFileSync(go, ['env', 'GOBIN'], { encoding: 'utf8' }).trim();
  const gopath = execFileSync(go, ['env', 'GOPATH'], { encoding: 'utf8' }).trim();
  return path.join(gobin || path.join(gopath, 'bin'), 'temporal');
}

export interface DevServerOptions {
  address: string;
  /** UI port; omit for a headless server. */
  uiPort?: number;
  /** The codec endpoint the UI decodes payloads with (from the browser). */
  uiCodecEndpoint?: string;
  /** SQLite file; omit for an in-memory server. */
  dbFile?: string;
  /**
   * Dynamic config beyond DISPATCH_SETTINGS and SINGLE_HOST_SETTINGS (`key=value`; it wins), as a bench's
   * `matching.enableFairness=false`.
   */
  dynamicConfig?: readonly string[];
  log?: (line: string) => void;
}

export interface DevServer {
  process: ChildProcess;
  stop(): Promise<void>;
}

/** Starts `temporal server start-dev` and resolves once its frontend accepts connections. */
/**
 * The dev server's single history shard reads new tasks at most 20 times a second
 * (`history.transferProcessorMaxPollRPS`), so every workflow or activity task waited 24–51 ms
 * before a worker got it: three no-op activities took ~350 ms. Polling at 1000/s and letting a
 * worker run the activities it schedules itself (eager execution) cut that to ~100 ms
 * (architecture.md, "Temporal latency, measured"). A production cluster sets these in its own
 * dynamic config file.
 */
export const DISPATCH_SETTINGS = [
  'history.transferProcessorMaxPollRPS=1000',
  'system.enableActivityEagerExecution=true',
  // Issue 43 item 1: the task queue's backlog is dispatched fairly between fairness keys (each
  // workspace's id, starter.ts) instead of first come, first served.
  'matching.enableFairness=true',
] as const;

/**
 * A dev server is one matching host, so its task queues have one partition each rather than Temporal's
 * default 4. Fairness between keys holds within a partition: with 4, a workspace's task on a partition
 * no poll was waiting on waited behind another workspace's flood on the partitions the worker did poll
 * (a worker of 4 workflow-task slots keeps one non-sticky poll open), and another workspace's p95 start
 * delay under a 500-run flood was ×1.1–3.5 its idle figure; with 1 it was ×1.0–1.5 (docs/benchmarks.md,
 * "Fairness between workspaces"). One partition dispatches on the order of 1,000 tasks a second, more
 * than one dev server's worker takes. Compose's and the cluster's `weft` queue has one too
 * (deploy/temporal/dynamic-config.yaml; raising it: docs/scale-out.md).
 */
export const SINGLE_HOST_SETTINGS = [
  'matching.numTaskqueueReadPartitions=1',
  'matching.numTaskqueueWritePartitions=1',
] as const;

export async function startDevServer(options: DevServerOptions): Promise<DevServer> {
  const { host, port } = splitAddress(options.address);
  const args = ['server', 'start-dev', '--ip', host, '--port', String(port), '--log-level', 'error'];
  for (const key of CUSTOM_SEARCH_ATTRIBUTES) args.push('--search-attribute', `${key.name}=${devServerTypeName(key)}`);
  const given = [...DISPATCH_SETTINGS, ...SINGLE_HOST_SETTINGS, ...(options.dynamicConfig ?? [])];
  const settings = new Map(given.map((s) => [s.split('=')[0], s]));
  for (const setting of settings.values()) args.push('--dynamic-config-value', setting);
  if (options.uiPort) {
    args.push('--ui-port', String(options.uiPort), '--ui-ip', host);
    if (options.uiCodecEndpoint) args.push('--ui-codec-endpoint', options.uiCodecEndpoint);
  } else {
    args.push('--headless');
  }
  if (options.dbFile) {
    mkdirSync(path.dirname(options.dbFile), { recursive: true });
    args.push('--db-filename', options.dbFile);
  }
  const child = spawn(temporalCliPath(), args, { stdio: ['ignore', 'pipe', 'pipe'] });
  child.stdout?.on('data', (chunk: Buffer) => options.log?.(chunk.toString().trimEnd()));
  child.stderr?.on('data', (chunk: Buffer) => options.log?.(chunk.toString().trimEnd()));

  const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()));
  const deadline = Date.now() + 60_000;
  while (!(await isListening(options.address))) {
    if (child.exitCode !== null) throw new Error(`temporal server start-dev exited with code ${child.exitCode}`);
    if (Date.now() > deadline) {
      child.kill('SIGKILL');
      throw new Error('temporal server start-dev did not open its port within 60 s');
    }
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
  return {
    process: child,
    async stop() {
      if (child.exitCode !== null) return;
      child.kill('SIGTERM');
      const timer = setTimeout(() => child.kill('SIGKILL'), 10_000);
      await exited;
      clearTimeout(timer);
    },
  };
}
