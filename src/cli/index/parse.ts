import { posix } from 'node:path';
import { ts } from 'ts-morph';
import { symbolKey } from '../../code/keys';
import type { IngestSymbol } from '../../code/schemas';
import { LIMITS } from '../../rules/limits';

/*
 * Client-side parsing for `weft index`: the symbols of one file at a time, read from the source file
 * of the repository's program (./checker.ts) when there is one, and the call sites in each symbol's
 * body. The calls are resolved after every file is parsed (./resolve.ts): by the type checker, and
 * by name only where the checker cannot type the callee.
 */

const C = LIMITS.code;
export const SOURCE_EXTENSIONS = ['.ts', '.tsx', '.mts', '.cts', '.js', '.jsx', '.mjs', '.cjs'];
const TEST_FILE = /(^|\/)(test|tests|__tests__)\/|\.(test|spec)\.[cm]?[jt]sx?$/;
const TEST_CALLS = new Set(['it', 'test']);
const SUITE_CALLS = new Set(['describe', 'suite', 'context']);

/** A call in a symbol's body (a call, `new` or tagged template at `site`), resolved once every file is parsed. */
export type CallRef = (
  | { kind: 'local'; name: string }
  | { kind: 'this'; name: string }
  | { kind: 'member'; object: string; name: string }
  | { kind: 'method'; name: string }
) & { site: ts.Node };

export interface ParsedFile {
  path: string;
  symbols: IngestSymbol[];
  /** Symbol key → the calls in its body. */
  calls: Map<string, CallRef[]>;
  /** Local name → the module path it was imported from (resolved to a repository path) and the imported name. */
  imports: Map<string, { path: string | undefined; name: string }>;
  testKeys: Set<string>;
  /** The class declarations, for the IMPLEMENTS/OVERRIDES edges of their methods. */
  classes: ts.ClassDeclaration[];
}

const collapse = (text: string, max: number) => {
  const flat = text.replace(/\s+/g, ' ').trim();
  return flat.length > max ? `${flat.slice(0, max - 1)}…` : flat;
};

/** The `/** … *\/` comment right before a node, without its stars. */
function docOf(source: ts.SourceFile, node: ts.Node): string | undefined {
  const ranges = ts.getLeadingCommentRanges(source.text, node.getFullStart()) ?? [];
  const last = ranges.at(-1);
  if (!last) return undefined;
  const text = source.text.slice(last.pos, last.end);
  if (!text.startsWith('/**')) return undefined;
  const body = text
    .slice(3, -2)
    .split('\n')
    .map((line) => line.replace(/^\s*\*\s?/, ''))
    .join(' ');
  const doc = collapse(body, C.docChars);
  return doc.length > 0 ? doc : undefined;
}

/** The declaration's text up to its body: name, parameters, return type. */
function signatureOf(source: ts.SourceFile, node: ts.Node, body: ts.Node | undefined): string {
  const end = body ? body.getStart(source) : node.getEnd();
  const text = source.text.slice(node.getStart(source), end).replace(/\s*=>\s*$/, '');
  return collapse(text.replace(/^(export\s+)?(default\s+)?(declare\s+)?/, ''), C.signatureChars);
}

const lineOf = (source: ts.SourceFile, node: ts.Node) =>
  source.getLineAndCharacterOfPosition(node.getStart(source)).line + 1;

const nameText = (name: ts.Node | undefined): string | undefined =>
  name && (ts.isIdentifier(name) || ts.isStringLiteral(name) || ts.isPrivateIdentifier(name)) ? name.text : undefined;

/** Resolves a relative import to a repository path among `files` (extension and /index tried). */
export function resolveImport(from: string, specifier: string, files: ReadonlySet<string>): string | undefined {
  if (!specifier.startsWith('.')) return undefined;
  // `'./'` and `'../'` name a directory's index: the trailing slash goes, or no candidate matches.
  const base = posix.normalize(posix.join(posix.dirname(from), specifier)).replace(/(.)\/+$/, '$1');
  const stem = base.replace(/\.(js|mjs|cjs|jsx)$/, '');
  const candidates = [base, ...[stem, `${stem}/index`].flatMap((s) => SOURCE_EXTENSIONS.map((ext) => `${s}${ext}`))];
  return candidates.find((candidate) => files.has(candidate));
}

/** The expression a call site calls: a call's or `new`'s callee, a tagged template's tag. */
export const calleeOf = (node: ts.Node): ts.Expression | undefined =>
  ts.isCallExpression(node) || ts.isNewExpression(node)
    ? node.expression
    : ts.isTaggedTemplateExpression(node)
      ? node.tag
      : undefined;

/** The calls in a function's body and in its parameters' default values (`t = nowSeconds()`). */
function callsIn(body: ts.Node): CallRef[] {
  const calls: CallRef[] = [];
  const visit = (node: ts.Node) => {
    const callee = calleeOf(node);
    if (callee && ts.isIdentifier(callee)) calls.push({ kind: 'local', name: callee.text, site: node });
    else if (callee && ts.isPropertyAccessExpression(callee)) {
      const name = callee.name.text;
      if (callee.expression.kind === ts.SyntaxKind.ThisKeyword) calls.push({ kind: 'this', name, site: node });
      else if (ts.isIdentifier(callee.expression)) {
        calls.push({ kind: 'member', object: callee.expression.text, name, site: node });
      } else calls.push({ kind: 'method', name, site: node });
    }
    ts.forEachChild(node, visit);
  };
  const fn = body.parent;
  if (fn && ts.isFunctionLike(fn)) for (const parameter of fn.parameters) visit(parameter);
  visit(body);
  return calls;
}

const functionLike = (node: ts.Node | undefined): node is ts.ArrowFunction | ts.FunctionExpression =>
  node !== undefined && (ts.isArrowFunction(node) || ts.isFunctionExpression(node));

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
    imports: new Map(),
    testKeys: new Set(),
    classes: [],
  };
  const add = (symbol: IngestSymbol, body: ts.Node | undefined) => {
    if (symbol.name.length > C.nameChars) return;
    parsed.symbols.push(symbol);
    if (body) parsed.calls.set(symbolKey(symbol.kind, path, symbol.name), callsIn(body));
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
    } else if (ts.isFunctionDeclaration(statement) && statement.name) {
      const name = statement.name.text;
      add(
        {
          kind: 'function',
          path,
          name,
          line: lineOf(source, statement),
          signature: signatureOf(source, statement, statement.body),
          doc: docOf(source, statement),
        },
        statement.body,
      );
    } else if (ts.isVariableStatement(statement)) {
      for (const declaration of statement.declarationList.declarations) {
        const name = nameText(declaration.name);
        if (!name || !functionLike(declaration.initializer)) continue;
        add(
          {
            kind: 'function',
            path,
            name,
            line: lineOf(source, statement),
            signature: signatureOf(source, declaration, declaration.initializer.body),
            doc: docOf(source, statement),
          },
          declaration.initializer.body,
        );
      }
    } else if (ts.isInterfaceDeclaration(statement)) {
      const name = statement.name.text;
      add(
        {
          kind: 'interface',
          path,
          name,
          line: lineOf(source, statement),
          signature: collapse(`interface ${name}`, C.signatureChars),
          doc: docOf(source, statement),
        },
        undefined,
      );
      for (const member of statement.members) {
        const memberName = nameText(member.name);
        const callable =
          ts.isMethodSignature(member) ||
          (ts.isPropertySignature(member) && member.type !== undefined && ts.isFunctionTypeNode(member.type));
        if (!memberName || !callable) continue;
        add(
          {
            kind: 'method',
            path,
            name: `${name}.${memberName}`,
            line: lineOf(source, member),
            signature: signatureOf(source, member, undefined),
            doc: docOf(source, member),
          },
          undefined,
        );
      }
    } else if (ts.isClassDeclaration(statement) && statement.name) {
      const className = statement.name.text;
      parsed.classes.push(statement);
      add(
        {
          kind: 'class',
          path,
          name: className,
          line: lineOf(source, statement),
          signature: collapse(`class ${className}`, C.signatureChars),
          doc: docOf(source, statement),
        },
        undefined,
      );
      for (const member of statement.members) {
        const memberName = nameText(member.name);
        if (!memberName) continue;
        const body = ts.isMethodDeclaration(member)
          ? member.body
          : ts.isPropertyDeclaration(member) && functionLike(member.initializer)
            ? member.initializer.body
            : undefined;
        if (!body) continue;
        add(
          {
            kind: 'method',
            path,
            name: `${className}.${memberName}`,
            line: lineOf(source, member),
            signature: signatureOf(source, member, body),
            doc: docOf(source, member),
          },
          body,
        );
      }
    }
  }
  if (TEST_FILE.test(path)) collectTests(source, parsed, add);
  return parsed;
}

/** mocha/jest `it(title, fn)` / `test(title, fn)` under `describe`s: one code.test per full title. */
function collectTests(
  source: ts.SourceFile,
  parsed: ParsedFile,
  add: (symbol: IngestSymbol, body: ts.Node | undefined) => void,
) {
  const seen = new Map<string, number>();
  const visit = (node: ts.Node, suites: string[]) => {
    if (ts.isCallExpression(node)) {
      const callee = node.expression;
      const base = ts.isIdentifier(callee)
        ? callee.text
        : ts.isPropertyAccessExpression(callee) && ts.isIdentifier(callee.expression)
          ? callee.expression.text
          : undefined;
      const [titleNode, fn] = node.arguments;
      const title =
        titleNode && (ts.isStringLiteral(titleNode) || ts.isNoSubstitutionTemplateLiteral(titleNode))
          ? titleNode.text
          : undefined;
      if (base && title !== undefined && SUITE_CALLS.has(base)) {
        for (const argument of node.arguments) visit(argument, [...suites, title]);
        return;
      }
      if (base && title !== undefined && TEST_CALLS.has(base) && functionLike(fn)) {
        let name = collapse([...suites, title].join(' › '), C.nameChars);
        const count = (seen.get(name) ?? 0) + 1;
        seen.set(name, count);
        if (count > 1) name = `${name} (${count})`;
        add({ kind: 'test', path: parsed.path, name, line: lineOf(source, node) }, fn.body);
        parsed.testKeys.add(symbolKey('test', parsed.path, name));
        return;
      }
    }
    ts.forEachChild(node, (child) => visit(child, suites));
  };
  visit(source, []);
}
