import { ts } from 'ts-morph';
import { symbolKey } from '../../code/keys';
import type { IngestSymbol } from '../../code/schemas';
import { LIMITS } from '../../rules/limits';
import type { CallRef, ParsedFile } from './parse';
import { calleeOf, collapse, docOf, functionLike, lineOf, nameText, signatureOf, spanOf, unwrap } from './syntax';

/*
 * The symbols of one file and which of them each call site belongs to (issue 45): one walk of the
 * syntax tree with the symbol whose code runs there. A call belongs to the innermost symbol around
 * it; code outside every symbol (a module's `const x = make()`, its top-level statements) belongs to
 * the file, which stands for the module initializer. Symbols:
 * - top-level functions, classes, interfaces (their keys unchanged since issue 30);
 * - functions nested in a symbol: `code.function` `path#outer.inner`, contained by `outer`;
 * - class members: methods, arrow-function properties, accessors (`Class.x`, a getter and its
 *   setter are one symbol), abstract methods (callees only), and `Class.constructor`, which also
 *   holds the calls of the instance fields' initializers (they run in it);
 * - object-literal functions of a named object (`const detectors = { a() {} }`: `detectors.a`) and
 *   the callable members of interfaces, type aliases and of a parameter's inline object type
 *   (`fn(opts: { fetch(): … })`: `fn.opts.fetch`), as `code.method`;
 * - in test files, each `describe` body, hook and `it`/`test` (also `it.each(table)(title, fn)`), as
 *   `code.test`: `(describe) a › b`, `(beforeEach) a`, `a › b › title`.
 * A name met twice in one scope (overloads, a helper declared in two branches) is one symbol.
 */

const C = LIMITS.code;
const TEST_CALLS = new Set(['it', 'test']);
const SUITE_CALLS = new Set(['describe', 'suite', 'context']);
const HOOK_CALLS = new Set(['before', 'after', 'beforeEach', 'afterEach', 'beforeAll', 'afterAll']);

interface Scope {
  /** The symbol the code here belongs to. */
  key: string;
  /** The name prefix of a symbol declared here ('' at the top level, `outer.` inside `outer`). */
  prefix: string;
  suites: string[];
  /** The function whose body this is (a returned object literal's members are its). */
  fn?: ts.Node;
}

type FunctionNode = ts.SignatureDeclaration & { body?: ts.Node };

/** A call site's reference, by the shape of its callee (the checker resolves it later). */
function refOf(site: ts.Node, callee: ts.Expression): CallRef | undefined {
  if (ts.isIdentifier(callee)) return { kind: 'local', name: callee.text, site };
  if (ts.isPropertyAccessExpression(callee)) {
    const name = callee.name.text;
    if (callee.expression.kind === ts.SyntaxKind.ThisKeyword) return { kind: 'this', name, site };
    if (ts.isIdentifier(callee.expression)) return { kind: 'member', object: callee.expression.text, name, site };
    return { kind: 'method', name, site };
  }
  if (ts.isElementAccessExpression(callee)) return { kind: 'element', site };
  // `super(…)`: the base class (a constructor stands for its class, as `new Base()` does).
  if (callee.kind === ts.SyntaxKind.SuperKeyword) return { kind: 'method', name: 'constructor', site };
  return undefined;
}

export function collectSymbols(source: ts.SourceFile, parsed: ParsedFile, isTest: boolean): void {
  const path = parsed.path;
  const byKey = new Map<string, IngestSymbol>();
  const testNames = new Map<string, number>();

  /** Adds (or merges into) a symbol; its key, undefined when its name is too long to send. */
  const add = (symbol: IngestSymbol, parent: string, declarations: ts.Node[], hasBody: boolean) => {
    if (symbol.name.length > C.nameChars) return undefined;
    const key = symbolKey(symbol.kind, path, symbol.name);
    const known = byKey.get(key);
    if (known) Object.assign(known, symbol);
    else {
      byKey.set(key, symbol);
      parsed.symbols.push(symbol);
      parsed.parents.set(key, parent);
    }
    for (const declaration of declarations) parsed.declarations.set(spanOf(declaration), key);
    if (hasBody && !parsed.calls.has(key)) parsed.calls.set(key, []);
    return key;
  };

  /** A function-like symbol: its parameters' defaults and body are walked as its own. */
  const owner = (
    symbol: Omit<IngestSymbol, 'path'>,
    scope: Scope,
    fn: FunctionNode,
    declarations: ts.Node[],
    suites = scope.suites,
  ) => {
    const key = add({ ...symbol, path }, scope.key, declarations, fn.body !== undefined);
    const inner: Scope = key ? { key, prefix: `${symbol.name}.`, suites, fn } : scope;
    // `(): { stop(): void } => …`: the returned object's members, declared by the return type.
    if (key && fn.type) {
      const literals: ts.TypeLiteralNode[] = [];
      const find = (node: ts.Node): void =>
        ts.isTypeLiteralNode(node) ? void literals.push(node) : ts.forEachChild(node, find);
      find(fn.type);
      for (const literal of literals) typeMembers(literal.members, inner.prefix, key);
    }
    for (const parameter of fn.parameters) visit(parameter, inner);
    if (fn.body) visit(fn.body, inner);
    return key;
  };

  /** The callable members of an interface, type alias or inline object type, under `prefix`. */
  const typeMembers = (members: ts.NodeArray<ts.TypeElement>, prefix: string, parent: string) => {
    for (const member of members) {
      // A construct signature (`new (def: D): T`) is `prefix.new`: `new X(def)` through a value of the type.
      const name = ts.isConstructSignatureDeclaration(member) ? 'new' : nameText(member.name);
      if (!name) continue;
      const type = ts.isPropertySignature(member) ? member.type : undefined;
      if (type && ts.isTypeLiteralNode(type)) typeMembers(type.members, `${prefix}${name}.`, parent);
      else if (
        ts.isMethodSignature(member) ||
        ts.isConstructSignatureDeclaration(member) ||
        (type && ts.isFunctionTypeNode(type))
      ) {
        const symbol: IngestSymbol = {
          kind: 'method',
          path,
          name: `${prefix}${name}`,
          line: lineOf(source, member),
          signature: signatureOf(source, member, undefined),
          doc: docOf(source, member),
        };
        add(symbol, parent, [member], false);
      }
    }
  };

  /** The functions of a named object literal (`prefix` is `name.`); other values are walked in `scope`. */
  const objectMembers = (object: ts.ObjectLiteralExpression, prefix: string, scope: Scope) => {
    for (const property of object.properties) {
      const name = nameText(property.name);
      const value = ts.isPropertyAssignment(property) ? unwrap(property.initializer) : undefined;
      if (name && value && ts.isObjectLiteralExpression(value)) objectMembers(value, `${prefix}${name}.`, scope);
      else if (name && (functionLike(value) || ts.isMethodDeclaration(property) || ts.isAccessor(property))) {
        const fn = (functionLike(value) ? value : property) as FunctionNode;
        const symbol = {
          kind: 'method' as const,
          name: `${prefix}${name}`,
          line: lineOf(source, property),
          signature: signatureOf(source, property, fn.body),
          doc: docOf(source, property),
        };
        owner(symbol, { ...scope, prefix: '' }, fn, [property, fn]);
      } else visit(property, scope);
    }
  };

  const classMembers = (node: ts.ClassDeclaration, className: string, scope: Scope) => {
    parsed.classes.push(node);
    const classKey = add(
      {
        kind: 'class',
        path,
        name: className,
        line: lineOf(source, node),
        signature: collapse(`class ${className}`, C.signatureChars),
        doc: docOf(source, node),
      },
      scope.key,
      [node],
      false,
    );
    const members: Scope = { key: classKey ?? scope.key, prefix: '', suites: scope.suites };
    for (const clause of node.heritageClauses ?? []) visit(clause, scope);
    for (const decorator of ts.getDecorators(node) ?? []) visit(decorator, scope);
    const ctor = node.members.find(ts.isConstructorDeclaration);
    const fields = node.members.filter(
      (m): m is ts.PropertyDeclaration =>
        ts.isPropertyDeclaration(m) &&
        m.initializer !== undefined &&
        !functionLike(unwrap(m.initializer)) &&
        !m.modifiers?.some((modifier) => modifier.kind === ts.SyntaxKind.StaticKeyword),
    );
    let construction: Scope = scope;
    if (ctor || fields.some(hasCall)) {
      const at = ctor ?? node;
      const key = add(
        {
          kind: 'method',
          path,
          name: `${className}.constructor`,
          line: lineOf(source, at),
          signature: ctor ? signatureOf(source, ctor, ctor.body) : 'constructor()',
          doc: ctor ? docOf(source, ctor) : undefined,
        },
        members.key,
        [],
        true,
      );
      if (key) construction = { key, prefix: `${className}.constructor.`, suites: scope.suites };
    }
    for (const member of node.members) {
      const name = nameText(member.name);
      const value = ts.isPropertyDeclaration(member) && member.initializer ? unwrap(member.initializer) : undefined;
      if (ts.isConstructorDeclaration(member)) {
        for (const parameter of member.parameters) visit(parameter, construction);
        if (member.body) visit(member.body, construction);
      } else if (name && (ts.isMethodDeclaration(member) || ts.isAccessor(member) || functionLike(value))) {
        const fn = (functionLike(value) ? value : member) as FunctionNode;
        const symbol = {
          kind: 'method' as const,
          name: `${className}.${name}`,
          line: lineOf(source, member),
          signature: signatureOf(source, member, fn.body),
          doc: docOf(source, member),
        };
        for (const decorator of ts.canHaveDecorators(member) ? (ts.getDecorators(member) ?? []) : [])
          visit(decorator, scope);
        owner(symbol, members, fn, [member, fn]);
      } else if (ts.isPropertyDeclaration(member) && fields.includes(member)) {
        visit(member, construction);
      } else visit(member, scope);
    }
  };

  /** A mocha/jest block: `describe`/`it`/`test`/hooks (with `.only`, `.skip`, `.each(table)`); false when not one. */
  const testBlock = (node: ts.CallExpression, scope: Scope): boolean => {
    let callee = node.expression;
    let table: ts.CallExpression | undefined;
    if (ts.isCallExpression(callee) && ts.isPropertyAccessExpression(callee.expression)) {
      if (callee.expression.name.text !== 'each') return false;
      table = callee;
      callee = callee.expression;
    }
    const base = ts.isIdentifier(callee)
      ? callee.text
      : ts.isPropertyAccessExpression(callee) && ts.isIdentifier(callee.expression)
        ? callee.expression.text
        : undefined;
    if (!base) return false;
    const [first, second] = node.arguments;
    const title =
      first && (ts.isStringLiteral(first) || ts.isNoSubstitutionTemplateLiteral(first)) ? first.text : undefined;
    const hook = HOOK_CALLS.has(base);
    const fn = hook && functionLike(first) ? first : second;
    if (!functionLike(fn) || (!hook && title === undefined)) return false;
    const suite = SUITE_CALLS.has(base);
    if (!suite && !hook && !TEST_CALLS.has(base)) return false;
    const suites = suite ? [...scope.suites, title as string] : scope.suites;
    let name = suite
      ? `(describe) ${suites.join(' › ')}`
      : hook
        ? `(${base}) ${scope.suites.join(' › ')}`.trim()
        : [...scope.suites, title].join(' › ');
    name = collapse(name, C.nameChars);
    const count = (testNames.get(name) ?? 0) + 1;
    testNames.set(name, count);
    if (count > 1) name = `${name} (${count})`;
    if (table) visit(table, scope);
    for (const argument of node.arguments) if (argument !== fn) visit(argument, scope);
    // Contained by the file, as an `it` always was; its calls are its own.
    const key = owner({ kind: 'test', name, line: lineOf(source, node) }, { ...scope, key: path }, fn, [], suites);
    if (key) parsed.testKeys.add(key);
    return true;
  };

  const visit = (node: ts.Node, scope: Scope): void => {
    const callee = calleeOf(node);
    const ref = callee && refOf(node, callee);
    if (ref) parsed.calls.get(scope.key)?.push(ref);
    if (isTest && ts.isCallExpression(node) && testBlock(node, scope)) return;
    const topLevel = node.parent !== undefined && ts.isSourceFile(node.parent);
    if (ts.isFunctionDeclaration(node) && node.name) {
      const symbol = {
        kind: 'function' as const,
        name: `${scope.prefix}${node.name.text}`,
        line: lineOf(source, node),
        signature: signatureOf(source, node, node.body),
        doc: docOf(source, node),
      };
      owner(symbol, scope, node, [node]);
      return;
    }
    if (ts.isVariableDeclaration(node) && ts.isIdentifier(node.name) && node.initializer) {
      const value = unwrap(node.initializer);
      const statement = node.parent.parent;
      if (functionLike(value)) {
        const symbol = {
          kind: 'function' as const,
          name: `${scope.prefix}${node.name.text}`,
          line: lineOf(source, statement),
          signature: signatureOf(source, node, value.body),
          doc: docOf(source, statement),
        };
        owner(symbol, scope, value, [node, value]);
        return;
      }
      if (ts.isObjectLiteralExpression(value)) {
        objectMembers(value, `${scope.prefix}${node.name.text}.`, scope);
        return;
      }
    }
    if (ts.isObjectLiteralExpression(node) && scope.fn && returnedBy(node) === scope.fn) {
      // A factory's returned object (`return { a() {…} }`, `() => ({ … })`): its functions are the
      // factory's members, `path#factory.a`.
      objectMembers(node, scope.prefix, scope);
      return;
    }
    if (ts.isClassDeclaration(node) && node.name && topLevel) {
      classMembers(node, node.name.text, scope);
      return;
    }
    if (ts.isInterfaceDeclaration(node) && topLevel) {
      const name = node.name.text;
      const symbol: IngestSymbol = {
        kind: 'interface',
        path,
        name,
        line: lineOf(source, node),
        signature: collapse(`interface ${name}`, C.signatureChars),
        doc: docOf(source, node),
      };
      const key = add(symbol, scope.key, [node], false);
      typeMembers(node.members, `${name}.`, key ?? scope.key);
      return;
    }
    if (ts.isTypeAliasDeclaration(node) && topLevel && ts.isTypeLiteralNode(node.type)) {
      typeMembers(node.type.members, `${node.name.text}.`, scope.key);
      return;
    }
    if (ts.isParameter(node) && ts.isIdentifier(node.name) && node.type && ts.isTypeLiteralNode(node.type)) {
      if (scope.key !== path) typeMembers(node.type.members, `${scope.prefix}${node.name.text}.`, scope.key);
    }
    ts.forEachChild(node, (child) => visit(child, scope));
  };

  parsed.calls.set(path, []);
  visit(source, { key: path, prefix: '', suites: [] });
}

/** The function that returns an object literal (as `return` or an arrow's body), or undefined. */
function returnedBy(object: ts.Node): ts.Node | undefined {
  let node = object;
  while (
    ts.isParenthesizedExpression(node.parent) ||
    ts.isAsExpression(node.parent) ||
    ts.isSatisfiesExpression(node.parent)
  ) {
    node = node.parent;
  }
  if (ts.isArrowFunction(node.parent) && node.parent.body === node) return node.parent;
  if (!ts.isReturnStatement(node.parent)) return undefined;
  let up: ts.Node = node.parent;
  while (!ts.isSourceFile(up) && !ts.isFunctionLike(up)) up = up.parent;
  return up;
}

/** Whether a node holds a call site. */
function hasCall(node: ts.Node): boolean {
  return calleeOf(node) !== undefined || ts.forEachChild(node, hasCall) === true;
}
