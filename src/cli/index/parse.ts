import { posix } from 'node:path';
import { ts } from 'ts-morph';
import type { IngestSymbol } from '../../code/schemas';
import { collectSymbols } from './symbols';

/*
 * Client-side parsing for `weft index`: the symbols of one file at a time, read from the source file
 * of the repository's program (./checker.ts) when there is one, and the call sites that belong to
 * each symbol (./symbols.ts). The calls are resolved after every file is parsed (./resolve.ts): by
 * the type checker, and by name only where the checker cannot type the callee.
 */

export const SOURCE_EXTENSIONS = ['.ts', '.tsx', '.mts', '.cts', '.js', '.jsx', '.mjs', '.cjs'];
const TEST_FILE = /(^|\/)(test|tests|__tests__)\/|\.(test|spec)\.[cm]?[jt]sx?$/;

/** A call in a symbol's body (a call, `new` or tagged template at `site`), resolved once every file is parsed. */
export type CallRef = (
  | { kind: 'local'; name: string }
  | { kind: 'this'; name: string }
  | { kind: 'member'; object: string; name: string }
  | { kind: 'method'; name: string }
  /** `detectors[name](…)`: every member the object's type allows (./resolve.ts). */
  | { kind: 'element' }
) & { site: ts.Node };

export interface ParsedFile {
  path: string;
  symbols: IngestSymbol[];
  /** Symbol key → the calls in its body (the file's key: the calls of the module initializer). */
  calls: Map<string, CallRef[]>;
  /** Symbol key → the key of what contains it (the file, a class, the function it is nested in). */
  parents: Map<string, string>;
  /** A declaration's span (./syntax.ts spanOf) → its symbol key, for the resolver and the benchmark. */
  declarations: Map<string, string>;
  /** Local name → the module path it was imported from (resolved to a repository path) and the imported name. */
  imports: Map<string, { path: string | undefined; name: string }>;
  testKeys: Set<string>;
  /** The class declarations, for the IMPLEMENTS/OVERRIDES edges of their methods. */
  classes: ts.ClassDeclaration[];
}

/** Resolves a relative import to a repository path among `files` (extension and /index tried). */
export function resolveImport(from: string, specifier: string, files: ReadonlySet<string>): string | undefined {
  if (!specifier.startsWith('.')) return undefined;
  // `'./'` and `'../'` name a directory's index: the trailing slash goes, or no candidate matches.
  const base = posix.normalize(posix.join(posix.dirname(from), specifier)).replace(/(.)\/+$/, '$1');
  const stem = base.replace(/\.(js|mjs|cjs|jsx)$/, '');
  const candidates = [base, ...[stem, `${stem}/index`].flatMap((s) => SOURCE_EXTENSIONS.map((ext) => `${s}${ext}`))];
  return candidates.find((candidate) => files.has(candidate));
}

export { calleeOf } from './syntax';

/**
 * Parses one file (the program's source file of it when given, so that the checker can type its
 * call sites); undefined when it does not parse (the caller skips and reports it).
 */
export function parseFile(
  path: string,
  text: string,
  files: ReadonlySet<string>,
  programSource?: ts.SourceFile,
): ParsedFile | undefined {
  const kind = /\.[cm]?tsx$|\.jsx$/.test(path) ? ts.ScriptKind.TSX : ts.ScriptKind.Unknown;
  const source = programSource ?? ts.createSourceFile(path, text, ts.ScriptTarget.Latest, true, kind);
  // The parser never throws; what it could not parse is in its (internal) diagnostics.
  const diagnostics = (source as unknown as { parseDiagnostics?: unknown[] }).parseDiagnostics ?? [];
  if (diagnostics.length > 0) return undefined;

  const parsed: ParsedFile = {
    path,
    symbols: [{ kind: 'file', path, name: path, line: 1 }],
    calls: new Map(),
    parents: new Map(),
    declarations: new Map(),
    imports: new Map(),
    testKeys: new Set(),
    classes: [],
  };
  for (const statement of source.statements) {
    if (ts.isImportDeclaration(statement) && ts.isStringLiteral(statement.moduleSpecifier)) {
      const target = resolveImport(path, statement.moduleSpecifier.text, files);
      const clause = statement.importClause;
      if (clause?.name) parsed.imports.set(clause.name.text, { path: target, name: 'default' });
      const bindings = clause?.namedBindings;
      if (bindings && ts.isNamespaceImport(bindings))
        parsed.imports.set(bindings.name.text, { path: target, name: '*' });
      if (bindings && ts.isNamedImports(bindings)) {
        for (const element of bindings.elements) {
          parsed.imports.set(element.name.text, { path: target, name: (element.propertyName ?? element.name).text });
        }
      }
    }
  }
  collectSymbols(source, parsed, TEST_FILE.test(path));
  return parsed;
}
