import { execFile } from 'node:child_process';
import { mkdir, mkdtemp, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { promisify } from 'node:util';
import { getStack } from './stack';

const run = promisify(execFile);
const ROOT = path.resolve(__dirname, '../..');

export interface CliResult {
  code: number;
  stdout: string;
  stderr: string;
}

/** `weft index` exactly as a user runs it, against the test stack's API. */
export async function weftIndex(dir: string, apiKey: string, ...extra: string[]): Promise<CliResult> {
  try {
    const { stdout, stderr } = await run(
      path.join(ROOT, 'node_modules/.bin/tsx'),
      ['src/cli/main.ts', 'index', dir, '--base-url', getStack().baseUrl, '--api-key', apiKey, ...extra],
      { cwd: ROOT, env: process.env, maxBuffer: 64 * 1024 * 1024 },
    );
    return { code: 0, stdout, stderr };
  } catch (error) {
    const failed = error as CliResult;
    return { code: failed.code, stdout: failed.stdout, stderr: failed.stderr };
  }
}

/** A scratch git repository whose commits carry fixed authors and dates. */
export async function scratchRepo() {
  const dir = await mkdtemp(path.join(tmpdir(), 'weft-code-'));
  const git = (args: string[], env: Record<string, string> = {}) =>
    run('git', args, { cwd: dir, env: { ...process.env, ...env } });
  await git(['init', '--quiet', '--initial-branch=main']);
  return {
    dir,
    git,
    async write(files: Record<string, string>) {
      for (const [file, text] of Object.entries(files)) {
        await mkdir(path.dirname(path.join(dir, file)), { recursive: true });
        await writeFile(path.join(dir, file), text);
      }
    },
    async commit(message: string, author: string, date: string): Promise<string> {
      const [name, email] = author.split(' <');
      const env = {
        GIT_AUTHOR_NAME: name as string,
        GIT_AUTHOR_EMAIL: (email ?? 'x>').slice(0, -1),
        GIT_COMMITTER_NAME: name as string,
        GIT_COMMITTER_EMAIL: (email ?? 'x>').slice(0, -1),
        GIT_AUTHOR_DATE: date,
        GIT_COMMITTER_DATE: date,
      };
      await git(['add', '-A'], env);
      await git(['commit', '--quiet', '-m', message], env);
      return (await git(['rev-parse', 'HEAD'])).stdout.trim();
    },
  };
}
