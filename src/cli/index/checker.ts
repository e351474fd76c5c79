import { existsSync } from 'node:fs';
import { join, posix, relative, sep } from 'node:path';
import { Project, ts } from 'ts-morph';

/*
 * The repository's program for `weft index` (issue 30): a ts-morph Project over the repository's own
 * tsconfig.json when it has one (its paths, module resolution and libs), inferred options otherwise.
 * JavaScript is always allowed, so a mixed or JS-only repository is typed too (JSDoc, inference).
 * Only the texts `weft index` read itself are the roots; what they import is resolved as tsc would
 * (node_modules types included), so a receiver of a library type resolves to the library, not to
 * a same-named method of the repository.
 */

const INFERRED: ts.CompilerOptions = {
  target: ts.ScriptTarget.ES2022,
  module: ts.ModuleKind.NodeNext,
  moduleResolution: ts.ModuleResolutionKind.NodeNext,
  jsx: ts.JsxEmit.Preserve,
  allowJs: true,
  checkJs: true,
  esModuleInterop: true,
  resolveJsonModule: true,
};

export interface RepositoryProgram {
  /** The ts-morph project (its language service answers the accuracy benchmark). */
  project: Project;
  checker: ts.TypeChecker;
  /** The program's source file of a repository path. */
  sourceOf(path: string): ts.SourceFile | undefined;
  /** The repository path of a source file, undefined outside the repository (a library, lib.d.ts). */
  pathOf(source: ts.SourceFile): string | undefined;
}

function projectFor(root: string): Project {
  const tsconfig = join(root, 'tsconfig.json');
  const overrides: ts.CompilerOptions = { allowJs: true, noEmit: true, skipLibCheck: true };
  if (existsSync(tsconfig)) {
    try {
      return new Project({ tsConfigFilePath: tsconfig, skipAddingFilesFromTsConfig: true, compilerOptions: overrides });
    } catch {
      // An unreadable tsconfig (a missing `extends`): the inferred options, as if it had none.
    }
  }
  return new Project({ compilerOptions: { ...INFERRED, ...overrides } });
}

/** The program over `texts` (repository path → text), rooted at `root` (a real path). */
export function repositoryProgram(root: string, texts: ReadonlyMap<string, string>): RepositoryProgram {
  const project = projectFor(root);
  for (const [path, text] of texts) project.createSourceFile(join(root, path), text, { overwrite: true });
  const program = project.getProgram().compilerObject;
  const rootPosix = root.split(sep).join(posix.sep);
  return {
    project,
    checker: program.getTypeChecker(),
    sourceOf: (path) => program.getSourceFile(posix.join(rootPosix, path)),
    pathOf: (source) => {
      const path = relative(rootPosix, source.fileName).split(sep).join(posix.sep);
      return path.startsWith('..') || path.includes('node_modules/') ? undefined : path;
    },
  };
}
