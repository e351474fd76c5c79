/**
 * `npm run lint`'s size step (issue 38): no hand-written file in `src/`, `workflows/` or `activities/`
 * is over BUDGET lines, unless EXCEPTIONS names it with a reason. A file past the budget is read as
 * two files that have not been cut apart yet; the exception list is where a deliberate one says why.
 */
import { execFileSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { isGenerated } from './generated';

export const BUDGET = 450;

/** The folders the budget holds; `bench/` and `test/` are read by people too, but not held to it. */
export const RULED = ['src/', 'workflows/', 'activities/'] as const;

/**
 * The one list of files allowed over the budget, each with its reason. None may stay in `src/runs`
 * (issue 38); an entry whose file is back within the budget, or gone, fails the check too, so the
 * list never outlives its reasons.
 */
export const EXCEPTIONS: Readonly<Record<string, string>> = {};

/** Lines as `wc -l` and an editor count them: a last line without its newline still counts. */
export const lineCount = (text: string): number =>
  text === '' ? 0 : text.split('\n').length - (text.endsWith('\n') ? 1 : 0);

/** What is wrong with these files against the budget and the exceptions: one sentence per problem. */
export function sizeProblems(
  files: readonly { path: string; text: string }[],
  exceptions: Readonly<Record<string, string>> = EXCEPTIONS,
): string[] {
  const problems: string[] = [];
  const seen = new Set<string>();
  for (const file of files) {
    if (!RULED.some((folder) => file.path.startsWith(folder)) || isGenerated(file.text)) continue;
    seen.add(file.path);
    const lines = lineCount(file.text);
    const excepted = Object.hasOwn(exceptions, file.path);
    if (lines > BUDGET && !excepted) problems.push(`${file.path}: ${lines} lines, over ${BUDGET}: split it`);
    if (lines <= BUDGET && excepted) {
      problems.push(`${file.path}: ${lines} lines, within ${BUDGET}: remove its exception`);
    }
  }
  for (const listed of Object.keys(exceptions)) {
    if (!seen.has(listed)) problems.push(`${listed}: listed as an exception, but not a hand-written ruled file`);
  }
  return problems;
}

if (require.main === module) {
  const root = path.resolve(__dirname, '..');
  const paths = execFileSync('git', ['ls-files', '-z', ...RULED], { cwd: root, encoding: 'utf8' })
    .split('\0')
    .filter((file) => file !== '');
  const problems = sizeProblems(
    paths.map((file) => ({ path: file, text: readFileSync(path.join(root, file), 'utf8') })),
  );
  for (const problem of problems) console.log(problem);
  if (problems.length > 0) {
    console.error(`${problems.length} file size problem(s); exceptions and their reasons: scripts/file-size.ts`);
    process.exitCode = 1;
  }
}
