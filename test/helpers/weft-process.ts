import type { ChildProcess } from 'node:child_process';
import { spawn } from 'node:child_process';
import { once } from 'node:events';
import { mkdtempSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { Client, Connection } from '@temporalio/client';
import { loadConfig } from '../../src/platform/config';
import { createPayloadCodec, dataConverter } from '../../src/platform/temporal/codec';
import { temporalConnectionOptions } from '../../src/platform/temporal/connection-options';
import type { DevServer } from '../../src/platform/temporal/dev-server';
import { freePort, startDevServer } from '../../src/platform/temporal/dev-server';
import { eventually } from './eventually';

const ROOT = path.resolve(__dirname, '../..');

/** A Weft process of its own (`WEFT_PROCESS=worker|api npm start`), for tests that kill it. */
export interface WeftProcess {
  child: ChildProcess;
  /** The API's address (api processes only). */
  baseUrl: string;
  /** SIGKILL, as a crash or the OOM killer would: no drain, no shutdown hook. Resolves once it is gone. */
  kill(): Promise<void>;
  /** The tail of its stderr (why it exited, when it did). */
  output(): string;
}

function spawnWeft(role: 'worker' | 'api', env: Record<string, string>): { child: ChildProcess; output: () => string } {
  // node itself with tsx's loader, not the tsx CLI, which would run node as a grandchild and
  // outlive the SIGKILL meant for the process.
  const child = spawn(process.execPath, ['--import', 'tsx', 'main.ts'], {
    cwd: ROOT,
    env: {
      ...process.env,
      LOG_LEVEL: 'error',
      REQUEST_LOGGING: 'false',
      ...env,
      WEFT_PROCESS: role,
      TEMPORAL_DEV_SERVER: 'never',
    },
    stdio: ['ignore', 'ignore', 'pipe'],
  });
  // The tail of its stderr, for the message when it fails to come up.
  let tail = '';
  child.stderr?.on('data', (chunk: Buffer) => {
    tail = (tail + chunk.toString()).slice(-4000);
  });
  return { child, output: () => tail };
}

const killer = (child: ChildProcess) => async () => {
  if (child.exitCode !== null || child.signalCode !== null) return;
  const exited = once(child, 'exit');
  child.kill('SIGKILL');
  await exited;
};

/**
 * A worker-only Weft process. `env` names at least TEMPORAL_TASK_QUEUE (a `weft-durability-…` one)
 * and, for a server other than the suite's, TEMPORAL_ADDRESS; the database is the suite's.
 */
export function startWorkerProcess(env: Record<string, string>): WeftProcess {
  const { child, output } = spawnWeft('worker', env);
  return { child, baseUrl: '', kill: killer(child), output };
}

/** An API-only Weft process on a free port; resolves once `/v1/health` answers. */
export async function startApiProcess(env: Record<string, string>): Promise<WeftProcess> {
  const port = await freePort();
  const { child, output } = spawnWeft('api', { ...env, HOST: '127.0.0.1', PORT: String(port) });
  const baseUrl = `http://127.0.0.1:${port}`;
  // Two minutes: a machine shared with other suites has taken over one to start it (compiling on load).
  await eventually(
    async () => {
      if (child.exitCode !== null) throw new Error(`the API process exited (${child.exitCode}):\n${output()}`);
      return fetch(`${baseUrl}/v1/health`).then(
        (response) => response.ok,
        () => false,
      );
    },
    // A cold start (tsx compiling main.ts) took 29 s beside a six-process Temporal cluster on a busy 2-core machine.
    { what: 'the API process to answer /v1/health', timeoutMs: 180_000, intervalMs: 200 },
  ).catch(async (error: Error) => {
    await killer(child)();
    throw new Error(`${error.message}; its stderr:\n${output()}`);
  });
  return { child, baseUrl, kill: killer(child), output };
}

/**
 * A Temporal dev server of the test's own that keeps its state in a SQLite file, as `npm start`'s
 * does: killed and started again on the same address and file, it still holds every execution.
 */
export interface FileTemporal {
  address: string;
  start(): Promise<void>;
  /** SIGKILL: whatever it had not written to its file is lost, as in a crash. */
  kill(): Promise<void>;
  /** A client of this server with Weft's payload codec; closed by `remove`. */
  client(): Promise<Client>;
  /** Stops the server and deletes its file. */
  remove(): Promise<void>;
}

export async function fileTemporal(): Promise<FileTemporal> {
  const address = `127.0.0.1:${await freePort()}`;
  const dir = mkdtempSync(path.join(os.tmpdir(), 'weft-temporal-'));
  let server: DevServer | undefined;
  let connection: Connection | undefined;
  const kill = async () => {
    const child = server?.process;
    server = undefined;
    await connection?.close().catch(() => undefined);
    connection = undefined;
    if (child) await killer(child)();
  };
  return {
    address,
    async start() {
      server = await startDevServer({ address, dbFile: path.join(dir, 'temporal.db') });
    },
    kill,
    async client() {
      const config = loadConfig({ ...process.env, TEMPORAL_ADDRESS: address });
      connection ??= await Connection.connect(temporalConnectionOptions(config));
      return new Client({ connection, namespace: 'default', dataConverter: dataConverter(createPayloadCodec(config)) });
    },
    async remove() {
      await kill();
      rmSync(dir, { recursive: true, force: true });
    },
  };
}
