import { execFile } from 'node:child_process';
import { stat } from 'node:fs/promises';
import { promisify } from 'node:util';
import type { IngestCommit, TouchAction } from '../../code/schemas';
import { LIMITS } from '../../rules/limits';

const run = promisify(execFile);
const MAX_BUFFER = 256 * 1024 * 1024;

/** A CLI error with a message meant for the user (no stack trace). */
export class IndexError extends Error {}

const git = async (cwd: string, args: string[]) =>
  (await run('git', args, { cwd, maxBuffer: MAX_BUFFER, encoding: 'utf8' })).stdout;

/** The repository's top level; a clear error when the path is missing or not a git work tree. */
export async function repositoryRoot(dir: string): Promise<string> {
  const found = await stat(dir).catch(() => undefined);
  if (!found) throw new IndexError(`${dir}: no such directory`);
  if (!found.isDirectory()) throw new IndexError(`${dir}: not a directory`);
  try {
    return (await git(dir, ['rev-parse', '--show-toplevel'])).trim();
  } catch {
    throw new IndexError(`${dir}: not a git repository (git rev-parse found no work tree)`);
  }
}

/** Tracked files (paths from the top level, forward slashes). */
export async function trackedFiles(root: string): Promise<string[]> {
  return (await git(root, ['ls-files', '-z'])).split('\0').filter((path) => path.length > 0);
}

const ACTIONS: Record<string, TouchAction> = { A: 'added', M: 'modified', D: 'deleted', R: 'renamed', T: 'modified' };
const clip = (text: string, max: number) => (text.length > max ? `${text.slice(0, max - 1)}…` : text);

/**
 * The newest `max` commits with what each did to each file, from `git log --name-status -M`
 * (renames detected: R100 old new → `renamed` on the new path, with `previous_path`; a copy is
 * `added`). Merge commits list no files (git's default), so they touch nothing.
 */
export async function commitsOf(root: string, max: number): Promise<IngestCommit[]> {
  const out = await git(root, ['log', '--name-status', '-M', `-n${max}`, '--format=%x1e%H%x1f%an <%ae>%x1f%aI%x1f%s']);
  const commits: IngestCommit[] = [];
  for (const record of out.split('\x1e')) {
    const [header, ...lines] = record.split('\n');
    if (!header?.trim()) continue;
    const [sha, author, date, subject] = header.split('\x1f');
    if (!sha || !date) continue;
    const files: IngestCommit['files'] = [];
    for (const line of lines) {
      const [status, first, second] = line.split('\t');
      if (!status || !first) continue;
      const letter = status[0] as string;
      if ((letter === 'R' || letter === 'C') && second) {
        files.push(
          letter === 'R'
            ? { path: second, action: 'renamed', previous_path: first }
            : { path: second, action: 'added' },
        );
      } else if (ACTIONS[letter]) files.push({ path: first, action: ACTIONS[letter] });
    }
    commits.push({
      sha,
      author: clip(author ?? '', LIMITS.code.authorChars),
      committed_at: date,
      message: clip(subject ?? '', LIMITS.code.commitMessageChars),
      files: files
        .filter((file) => file.path.length <= LIMITS.code.pathChars)
        .slice(0, LIMITS.code.batch.filesPerCommit),
    });
  }
  return commits;
}
