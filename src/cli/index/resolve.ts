import { ts } from 'ts-morph';
import { symbolKey } from '../../code/keys';
import type { RepositoryProgram } from './checker';
import type { CallRef, ParsedFile } from './parse';
import { calleeOf, spanOf } from './syntax';

/*
 * The edges of the parsed files (issue 30). A call is resolved by the type checker when it can type
 * the callee: `x.m()` goes to the declaration of `m` on x's type (through aliases, re-exports, base
 * classes and interfaces), an import to what it finally exports, a local to the local. A callee the
 * checker types outside the repository (a library, the standard library) makes no edge. Only a
 * callee the checker cannot type at all (an untyped value, a file outside the program) falls back to
 * the names: the file's own declarations, its imports and `this.`; such an edge says
 * `resolution: "name"`. There is no guess by a method name across the repository.
 */

export type Resolution = 'type' | 'name' | 'union';

/** `path:span` of a declaration → its symbol key, over every parsed file (ParsedFile.declarations). */
export type DeclarationIndex = ReadonlyMap<string, string>;

export function declarationIndex(files: readonly ParsedFile[]): DeclarationIndex {
  const index = new Map<string, string>();
  for (const file of files) for (const [span, key] of file.declarations) index.set(`${file.path}:${span}`, key);
  return index;
}

export interface ResolvedEdge {
  type: 'CONTAINS' | 'CALLS' | 'TESTS' | 'IMPLEMENTS' | 'OVERRIDES';
  source: string;
  target: string;
  resolution?: Resolution;
}

const isTopLevel = (node: ts.Node) => ts.isSourceFile(node.parent);

/**
 * The symbol key of a declaration, as the parser named it (`index`: ./symbols.ts), or by its shape
 * for a top-level one without an index (`path#fn`, `path#Class`, `path#Class.m`); undefined when it
 * is no symbol of ours (a parameter, a library). A constructor stands for its class: `new X()` calls X.
 */
export function keyOfDeclaration(
  declaration: ts.Node,
  pathOf: RepositoryProgram['pathOf'],
  index?: DeclarationIndex,
): string | undefined {
  let node = declaration;
  if (ts.isConstructorDeclaration(node)) node = node.parent;
  if (index) {
    const path = pathOf(node.getSourceFile());
    if (path === undefined) return undefined;
    const own = index.get(`${path}:${spanOf(node)}`);
    if (own) return own;
  }
  if (ts.isArrowFunction(node) || ts.isFunctionExpression(node)) {
    // A function cast or wrapped (`(async () => …) as Store['save']`) is its holder's.
    while (
      ts.isParenthesizedExpression(node.parent) ||
      ts.isAsExpression(node.parent) ||
      ts.isSatisfiesExpression(node.parent)
    ) {
      node = node.parent;
    }
    node = node.parent;
    if (index) {
      const path = pathOf(node.getSourceFile());
      return path === undefined ? undefined : index.get(`${path}:${spanOf(node)}`);
    }
  }
  // With an index, what it does not name is no symbol (`declare const Thing` beside `interface Thing`
  // shares the interface's key, but is not it).
  if (index) return undefined;
  if (ts.isConstructorDeclaration(node)) node = node.parent;
  const named = (name: ts.Node | undefined) =>
    name && (ts.isIdentifier(name) || ts.isStringLiteral(name) || ts.isPrivateIdentifier(name)) ? name.text : undefined;
  let name: string | undefined;
  if (
    (ts.isFunctionDeclaration(node) || ts.isClassDeclaration(node) || ts.isInterfaceDeclaration(node)) &&
    isTopLevel(node)
  ) {
    name = named(node.name);
  } else if (ts.isVariableDeclaration(node) && ts.isVariableStatement(node.parent.parent)) {
    name = isTopLevel(node.parent.parent) ? named(node.name) : undefined;
  } else if (
    (ts.isMethodDeclaration(node) ||
      ts.isPropertyDeclaration(node) ||
      ts.isMethodSignature(node) ||
      ts.isPropertySignature(node)) &&
    (ts.isClassDeclaration(node.parent) || ts.isInterfaceDeclaration(node.parent)) &&
    isTopLevel(node.parent)
  ) {
    const owner = named(node.parent.name);
    const member = named(node.name);
    name = owner && member ? `${owner}.${member}` : undefined;
  }
  if (!name) return undefined;
  const path = pathOf(node.getSourceFile());
  return path === undefined ? undefined : symbolKey('symbol', path, name);
}

/** The checker's symbol of a call site's callee, aliases (imports, re-exports) followed to the end. */
function calleeSymbol(site: ts.Node, checker: ts.TypeChecker): ts.Symbol | undefined {
  const callee = calleeOf(site);
  if (!callee) return undefined;
  const at = ts.isPropertyAccessExpression(callee) ? callee.name : callee;
  let symbol = checker.getSymbolAtLocation(at);
  if (symbol && symbol.flags & ts.SymbolFlags.Alias) symbol = checker.getAliasedSymbol(symbol);
  if (symbol?.declarations?.length) return symbol;
  // An untyped callee (a library's value, whose types are not loaded): resolving its signature
  // would only check the arguments for nothing.
  if (checker.getTypeAtLocation(callee).flags & ts.TypeFlags.Any) return undefined;
  // A call the symbol lookup cannot place (e.g. `new` through an expression): its resolved signature.
  if (ts.isCallExpression(site) || ts.isNewExpression(site) || ts.isTaggedTemplateExpression(site)) {
    const declaration = checker.getResolvedSignature(site)?.declaration;
    if (declaration && !ts.isJSDocSignature(declaration)) {
      return (declaration as ts.Declaration & { symbol?: ts.Symbol }).symbol;
    }
  }
  return undefined;
}

/** A call by the checker: `{ key }` (undefined outside our symbols) when typed, undefined when not. */
function byType(call: CallRef, program: RepositoryProgram, keys: ReadonlySet<string>, index: DeclarationIndex) {
  const symbol = calleeSymbol(call.site, program.checker);
  if (!symbol?.declarations?.length) return undefined;
  const keyOf = (declaration: ts.Node) => {
    const key = keyOfDeclaration(declaration, program.pathOf, index);
    return key && keys.has(key) ? key : undefined;
  };
  // Overloads: any declaration names the same key; the first one that is ours wins. An interface
  // merged with a value of its name (zod's `const ZodString: $constructor<…>` and `interface
  // ZodString`) is not what a call calls: the value is.
  const values = symbol.declarations.filter((d) => !ts.isInterfaceDeclaration(d) && !ts.isTypeAliasDeclaration(d));
  for (const declaration of values.length > 0 ? values : symbol.declarations) {
    const key = keyOf(declaration);
    if (key) return { key };
  }
  // A value that holds a function declared elsewhere (`const stringType = ZodString.create`): the
  // declaration of the signature the call resolves to, when that is one of ours.
  if (ts.isCallExpression(call.site) || ts.isNewExpression(call.site) || ts.isTaggedTemplateExpression(call.site)) {
    const holder = values[0];
    if (holder && (ts.isVariableDeclaration(holder) || ts.isPropertyDeclaration(holder))) {
      const declaration = program.checker.getResolvedSignature(call.site)?.declaration;
      const key = declaration && !ts.isJSDocSignature(declaration) && keyOf(declaration);
      if (key) return { key };
    }
  }
  return { key: undefined };
}

/**
 * `detectors[name](…)`: the members of the object's type that the key's type allows (a literal or a
 * union of literals: those; any string: all of them) and that are functions of ours. Each is a
 * possible target (`resolution: "union"`); an object typed by an index signature (`Record<string,
 * Fn>`) names none, so the call makes no edge.
 */
function byElement(call: CallRef, program: RepositoryProgram, keys: ReadonlySet<string>, index: DeclarationIndex) {
  const callee = calleeOf(call.site);
  if (!callee || !ts.isElementAccessExpression(callee)) return [];
  const checker = program.checker;
  const objectType = checker.getTypeAtLocation(callee.expression);
  const keyType = checker.getTypeAtLocation(callee.argumentExpression);
  const literals = (keyType.isUnion() ? keyType.types : [keyType]).filter((t) => t.isStringLiteral());
  const names =
    literals.length > 0 && literals.length === (keyType.isUnion() ? keyType.types.length : 1)
      ? literals.map((t) => (t as ts.StringLiteralType).value)
      : objectType.getProperties().map((p) => p.name);
  const targets = new Set<string>();
  for (const name of names) {
    const property = objectType.getProperty(name);
    for (const declaration of property?.declarations ?? []) {
      const key = keyOfDeclaration(declaration, program.pathOf, index);
      if (key && keys.has(key)) targets.add(key);
    }
  }
  return [...targets];
}

/** A call by name: the file's own declarations, its imports, `this.` (never a guess across the repository). */
function byName(file: ParsedFile, call: CallRef, className: string | undefined, keys: ReadonlySet<string>) {
  const existing = (key: string) => (keys.has(key) ? key : undefined);
  if (call.kind === 'local') {
    const own = existing(`${file.path}#${call.name}`);
    if (own) return own;
    const source = file.imports.get(call.name);
    return source?.path ? existing(`${source.path}#${source.name}`) : undefined;
  }
  if (call.kind === 'this') return className ? existing(`${file.path}#${className}.${call.name}`) : undefined;
  if (call.kind === 'member') {
    const source = file.imports.get(call.object);
    if (source?.path && source.name === '*') return existing(`${source.path}#${call.name}`);
    if (source?.path) return existing(`${source.path}#${source.name}.${call.name}`);
    return existing(`${file.path}#${call.object}.${call.name}`);
  }
  return undefined;
}

/** IMPLEMENTS (to an interface member) and OVERRIDES (to a base class's) from each method of `node`. */
function heritageEdges(
  node: ts.ClassDeclaration,
  program: RepositoryProgram,
  keys: ReadonlySet<string>,
  path: string,
  index: DeclarationIndex,
): ResolvedEdge[] {
  const className = node.name?.text;
  if (!className) return [];
  const edges: ResolvedEdge[] = [];
  for (const clause of node.heritageClauses ?? []) {
    for (const base of clause.types) {
      const type = program.checker.getTypeAtLocation(base);
      for (const member of node.members) {
        const name = member.name && ts.isIdentifier(member.name) ? member.name.text : undefined;
        const source = name ? `${path}#${className}.${name}` : undefined;
        if (!name || !source || !keys.has(source)) continue;
        for (const declaration of type.getProperty(name)?.declarations ?? []) {
          const target = keyOfDeclaration(declaration, program.pathOf, index);
          if (!target || target === source || !keys.has(target)) continue;
          const onInterface = ts.isInterfaceDeclaration(declaration.parent);
          edges.push({ type: onInterface ? 'IMPLEMENTS' : 'OVERRIDES', source, target, resolution: 'type' });
          break;
        }
      }
    }
  }
  return edges;
}

/**
 * Every edge of the parsed files: CONTAINS (what holds each symbol: file → class/interface → method,
 * file → function, outer function → nested function, file → test), CALLS between symbols (the
 * file's: its module initializer's), TESTS from a test block to the symbols it calls, and
 * IMPLEMENTS/OVERRIDES from a class's method to the interface or base-class member it implements.
 * Without a program (no checker) every call is resolved by name.
 */
export function edgesOf(files: readonly ParsedFile[], program?: RepositoryProgram): ResolvedEdge[] {
  const keys = new Set<string>();
  for (const file of files) {
    for (const symbol of file.symbols) keys.add(symbolKey(symbol.kind, file.path, symbol.name));
  }
  const index = declarationIndex(files);
  const edges: ResolvedEdge[] = [];
  for (const file of files) {
    for (const symbol of file.symbols) {
      if (symbol.kind === 'file') continue;
      const key = symbolKey(symbol.kind, file.path, symbol.name);
      const parent = file.parents.get(key) ?? file.path;
      edges.push({ type: 'CONTAINS', source: keys.has(parent) ? parent : file.path, target: key });
    }
    for (const [source, calls] of file.calls) {
      const className = source.includes('#') ? source.slice(source.indexOf('#') + 1).split('.')[0] : undefined;
      const targets = new Map<string, Resolution>();
      const rank = { type: 2, name: 1, union: 0 };
      const found = (target: string | undefined, resolution: Resolution) => {
        const known = targets.get(target ?? '');
        // One edge per target: typed wins over a name match or a possible target of the same.
        if (target && target !== source && (known === undefined || rank[known] < rank[resolution])) {
          targets.set(target, resolution);
        }
      };
      for (const call of calls) {
        if (call.kind === 'element') {
          for (const target of program ? byElement(call, program, keys, index) : []) found(target, 'union');
          continue;
        }
        const typed = program ? byType(call, program, keys, index) : undefined;
        found(typed ? typed.key : byName(file, call, className, keys), typed ? 'type' : 'name');
      }
      const type = file.testKeys.has(source) ? 'TESTS' : 'CALLS';
      for (const [target, resolution] of targets) edges.push({ type, source, target, resolution });
    }
    if (program) for (const node of file.classes) edges.push(...heritageEdges(node, program, keys, file.path, index));
  }
  return edges;
}
