import { existsSync } from 'node:fs';
import { dirname, join, posix, relative, sep } from 'node:path';
// ts-morph's own dependency (pinned by it): the standard library's .d.ts texts that its `ts` ships with.
import { getLibFiles } from '@ts-morph/common';
import { ts } from 'ts-morph';

/*
 * The repository's program for `weft index` (issue 30): the TypeScript compiler's program over the
 * repository's own tsconfig.json when it has one (its paths, module resolution and libs), inferred
 * options otherwise. JavaScript is always allowed, so a mixed or JS-only repository is typed too
 * (JSDoc, inference). Only the texts `weft index` read itself are the roots, served from memory.
 *
 * What it leaves out, for time and memory (docs/benchmarks.md "Code graph accuracy"): no
 * diagnostics are asked for (types are computed only where a call site needs them), and a module
 * that resolves into node_modules is not loaded (nor are `types` packages), so a value of a
 * library's type is untyped: a call on it makes no edge by type, and the name fallback finds none
 * outside the repository either. The standard library (lib.d.ts) stays, so arrays, promises and
 * the like keep their element types. `libraries: true` loads node_modules as tsc would (the
 * accuracy benchmark compares both).
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
  program: ts.Program;
  checker: ts.TypeChecker;
  /** The program's source file of a repository path. */
  sourceOf(path: string): ts.SourceFile | undefined;
  /** The repository path of a source file, undefined outside the repository (a library, lib.d.ts). */
  pathOf(source: ts.SourceFile): string | undefined;
}

/** The repository's compiler options: its tsconfig.json's (extends followed) or the inferred ones. */
export function compilerOptionsFor(root: string): ts.CompilerOptions {
  const tsconfig = join(root, 'tsconfig.json');
  if (existsSync(tsconfig)) {
    const read = ts.readConfigFile(tsconfig, ts.sys.readFile);
    if (!read.error) {
      const parsed = ts.parseJsonConfigFileContent(read.config, ts.sys, dirname(tsconfig), undefined, tsconfig);
      // An unreadable `extends` leaves options half-set: the inferred ones instead, as if it had none.
      if (!parsed.errors.some((error) => error.code === 6053 || error.code === 5083)) return parsed.options;
    }
  }
  return INFERRED;
}

/** Where the standard library's files seem to lie (served from memory, never read from disk). */
const LIB_FOLDER = '/node_modules/typescript/lib';
let libTexts: Map<string, string> | undefined;
const standardLibrary = () => {
  libTexts ??= new Map(getLibFiles().map((file) => [posix.join(LIB_FOLDER, file.fileName), file.text]));
  return libTexts;
};

const inNodeModules = (fileName: string) => fileName.split(/[\\/]/).includes('node_modules');

/** The program over `texts` (repository path → text), rooted at `root` (a real path). */
export function repositoryProgram(
  root: string,
  texts: ReadonlyMap<string, string>,
  options: { libraries?: boolean } = {},
): RepositoryProgram {
  const libraries = options.libraries ?? false;
  const compilerOptions: ts.CompilerOptions = {
    ...compilerOptionsFor(root),
    allowJs: true,
    noEmit: true,
    skipLibCheck: true,
    ...(libraries ? {} : { types: [] }),
  };
  const rootPosix = root.split(sep).join(posix.sep);
  const memory = new Map<string, string>(standardLibrary());
  for (const [path, text] of texts) memory.set(posix.join(rootPosix, path), text);
  const host = ts.createCompilerHost(compilerOptions, true);
  host.getDefaultLibLocation = () => LIB_FOLDER;
  host.getDefaultLibFileName = (options) => posix.join(LIB_FOLDER, ts.getDefaultLibFileName(options));
  const diskSourceFile = host.getSourceFile.bind(host);
  host.getSourceFile = (fileName, languageVersion, onError, shouldCreate) => {
    const text = memory.get(fileName);
    return text === undefined
      ? diskSourceFile(fileName, languageVersion, onError, shouldCreate)
      : ts.createSourceFile(fileName, text, languageVersion, true);
  };
  const diskExists = host.fileExists.bind(host);
  host.fileExists = (fileName) => memory.has(fileName) || diskExists(fileName);
  // The directories of the texts exist for module resolution even when the texts are not on disk.
  const directories = new Set<string>();
  for (const fileName of memory.keys()) {
    for (let dir = posix.dirname(fileName); !directories.has(dir); dir = posix.dirname(dir)) {
      directories.add(dir);
      if (dir === posix.dirname(dir)) break;
    }
  }
  const diskDirectoryExists = host.directoryExists?.bind(host);
  host.directoryExists = (dir) =>
    directories.has(dir.length > 1 ? dir.replace(/\/+$/, '') : dir) ||
    (diskDirectoryExists?.(dir) ?? ts.sys.directoryExists(dir));
  const diskRead = host.readFile.bind(host);
  host.readFile = (fileName) => memory.get(fileName) ?? diskRead(fileName);
  const cache = ts.createModuleResolutionCache(root, host.getCanonicalFileName, compilerOptions);
  host.resolveModuleNameLiterals = (literals, containingFile, redirected, resolutionOptions, containing) =>
    literals.map((literal) => {
      const mode = ts.getModeForUsageLocation(containing, literal, resolutionOptions);
      const resolved = ts.resolveModuleName(
        literal.text,
        containingFile,
        resolutionOptions,
        host,
        cache,
        redirected,
        mode,
      );
      const file = resolved.resolvedModule?.resolvedFileName;
      return !libraries && file && inNodeModules(file) ? { resolvedModule: undefined } : resolved;
    });
  const rootNames = [...texts.keys()].map((path) => posix.join(rootPosix, path));
  const program = ts.createProgram({ rootNames, options: compilerOptions, host });
  return {
    program,
    checker: program.getTypeChecker(),
    sourceOf: (path) => program.getSourceFile(posix.join(rootPosix, path)),
    pathOf: (source) => {
      const path = relative(rootPosix, source.fileName).split(sep).join(posix.sep);
      return path.startsWith('..') || path.includes('node_modules/') ? undefined : path;
    },
  };
}
