import { execFileSync } from 'node:child_process';
import { chmodSync, copyFileSync, existsSync, mkdirSync, mkdtempSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';

/**
 * The Temporal server and its SQL tool, built once with `go install` from the machine's Go module source
 * (whatever GOPROXY and GOFLAGS the machine's Go is configured with), as scripts/setup.sh builds the CLI.
 */
const MODULE = 'go.temporal.io/server';

/** Go itself: on PATH, else where these machines keep it (a non-login shell's PATH may lack it). */
export function goCommand(): string {
  for (const dir of (process.env.PATH ?? '').split(path.delimiter)) {
    if (dir && existsSync(path.join(dir, 'go'))) return path.join(dir, 'go');
  }
  return '/usr/local/go/bin/go';
}

const goEnv = (name: string) => execFileSync(goCommand(), ['env', name], { encoding: 'utf8' }).trim();

/** GOBIN, else GOPATH/bin: where `go install` puts binaries (scripts/setup.sh's rule). */
export function goBinDir(): string {
  return goEnv('GOBIN') || path.join(goEnv('GOPATH'), 'bin');
}

export interface TemporalBinaries {
  server: string;
  sqlTool: string;
}

const installedVersion = (server: string) => {
  try {
    // `temporal-server --version` prints "temporal version 1.29.1".
    return execFileSync(server, ['--version'], { encoding: 'utf8' }).trim().split(' ').pop();
  } catch {
    return undefined;
  }
};

/** Builds `temporal-server` and `temporal-sql-tool` of `version` into the Go bin directory unless there. */
export function ensureTemporalBinaries(version: string, log: (line: string) => void): TemporalBinaries {
  const bin = goBinDir();
  const binaries = { server: path.join(bin, 'temporal-server'), sqlTool: path.join(bin, 'temporal-sql-tool') };
  if (installedVersion(binaries.server) === version && existsSync(binaries.sqlTool)) return binaries;
  log(`building the Temporal server and temporal-sql-tool v${version} with go install (takes minutes, once)`);
  // `go install` names binaries after their package directories (`server`, `sql`): built apart, then renamed.
  const staging = mkdtempSync(path.join(os.tmpdir(), 'temporal-build-'));
  try {
    const started = Date.now();
    execFileSync(goCommand(), ['install', `${MODULE}/cmd/server@v${version}`, `${MODULE}/cmd/tools/sql@v${version}`], {
      cwd: os.tmpdir(),
      env: { ...process.env, GOBIN: staging },
      stdio: 'inherit',
    });
    mkdirSync(bin, { recursive: true });
    for (const [built, target] of [
      ['server', binaries.server],
      ['sql', binaries.sqlTool],
    ] as const) {
      copyFileSync(path.join(staging, built), target);
      chmodSync(target, 0o755);
    }
    log(`built in ${Math.round((Date.now() - started) / 1000)} s`);
  } finally {
    rmSync(staging, { recursive: true, force: true });
  }
  return binaries;
}

/** The module's source directory in the Go module cache (downloaded if missing): its schema files. */
export function temporalModuleDir(version: string): string {
  const out = execFileSync(goCommand(), ['mod', 'download', '-json', `${MODULE}@v${version}`], {
    cwd: os.tmpdir(),
    encoding: 'utf8',
  });
  return (JSON.parse(out) as { Dir: string }).Dir;
}
