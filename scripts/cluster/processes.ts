import { spawn } from 'node:child_process';
import { closeSync, existsSync, mkdirSync, openSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { isListening } from '../../src/platform/temporal/dev-server';
import type { ClusterProcess, ClusterSettings } from './layout';
import { processEnvironment, TEMPORAL_DEPLOY_DIR } from './layout';

/**
 * The cluster's processes, each started detached with its pid in `<stateDir>/pids/<name>.pid` and its output
 * in `<stateDir>/logs/<name>.log`, so `npm run cluster -- down` (or a test's fault) finds it by pid later.
 */
const pidFile = (settings: ClusterSettings, name: string) => path.join(settings.stateDir, 'pids', `${name}.pid`);
export const logFile = (settings: ClusterSettings, name: string) => path.join(settings.stateDir, 'logs', `${name}.log`);

const alive = (pid: number) => {
  try {
    process.kill(pid, 0);
    return true;
  } catch {
    return false;
  }
};

/** The recorded pid if that process is still a Temporal server (a reused pid is not ours). */
export function runningPid(settings: ClusterSettings, name: string): number | undefined {
  const file = pidFile(settings, name);
  if (!existsSync(file)) return undefined;
  const pid = Number(readFileSync(file, 'utf8').trim());
  if (!Number.isInteger(pid) || pid <= 0 || !alive(pid)) return undefined;
  try {
    const command = readFileSync(`/proc/${pid}/cmdline`, 'utf8');
    // A zombie (killed, not yet reaped by the test that spawned it) has an empty command line.
    return command.includes('temporal-server') ? pid : undefined;
  } catch {
    return undefined;
  }
}

/** Starts one process of the cluster (unless it runs) and returns its pid. */
export function startProcess(settings: ClusterSettings, server: string, target: ClusterProcess): number {
  const running = runningPid(settings, target.name);
  if (running) return running;
  for (const dir of ['pids', 'logs']) mkdirSync(path.join(settings.stateDir, dir), { recursive: true });
  const log = openSync(logFile(settings, target.name), 'a');
  writeFileSync(log, `--- ${new Date().toISOString()} starting ${target.name}\n`);
  const args = ['--root', TEMPORAL_DEPLOY_DIR, '--config', 'config', '--env', 'weft', '--allow-no-auth'];
  const child = spawn(server, [...args, 'start', '--service', target.service], {
    detached: true,
    stdio: ['ignore', log, log],
    env: { ...process.env, ...processEnvironment(settings, target) },
  });
  closeSync(log);
  child.unref();
  if (!child.pid) throw new Error(`could not start ${target.name}`);
  writeFileSync(pidFile(settings, target.name), `${child.pid}\n`);
  return child.pid;
}

/** Signals a process by its recorded pid and waits for it to be gone (SIGKILL after `graceMs`). */
export async function stopProcess(
  settings: ClusterSettings,
  name: string,
  signal: NodeJS.Signals = 'SIGTERM',
  graceMs = 20_000,
): Promise<number | undefined> {
  const pid = runningPid(settings, name);
  if (pid === undefined) {
    rmSync(pidFile(settings, name), { force: true });
    return undefined;
  }
  const signalled = (which: NodeJS.Signals) => {
    try {
      process.kill(pid, which);
    } catch {
      // Gone already.
    }
  };
  signalled(signal);
  const deadline = Date.now() + graceMs;
  let killed = signal === 'SIGKILL';
  while (runningPid(settings, name) !== undefined) {
    if (!killed && Date.now() > deadline) {
      signalled('SIGKILL');
      killed = true;
    }
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
  rmSync(pidFile(settings, name), { force: true });
  return pid;
}

/**
 * Waits until the process answers on its membership port and, but for the internal worker (which serves no
 * gRPC), its gRPC port; or fails with the tail of its log.
 */
export async function waitListening(settings: ClusterSettings, target: ClusterProcess, timeoutMs = 60_000) {
  const deadline = Date.now() + timeoutMs;
  const ports = target.service === 'worker' ? [target.membershipPort] : [target.membershipPort, target.grpcPort];
  const listening = async () => {
    for (const port of ports) if (!(await isListening(`${settings.host}:${port}`))) return false;
    return true;
  };
  while (!(await listening())) {
    if (Date.now() > deadline || runningPid(settings, target.name) === undefined) {
      const tail = existsSync(logFile(settings, target.name))
        ? readFileSync(logFile(settings, target.name), 'utf8').split('\n').slice(-15).join('\n')
        : '';
      throw new Error(`${target.name} did not open ports ${ports.join(' and ')}:\n${tail}`);
    }
    await new Promise((resolve) => setTimeout(resolve, 200));
  }
}
