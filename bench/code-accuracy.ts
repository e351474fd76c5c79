/**
 * `npm run bench -- code-accuracy [<repo-dir>] [--copies N]`
 *
 * The code graph's CALLS edges (issue 30) against the TypeScript language service on the same
 * program: for every function and method `weft index` makes a symbol of, the language service's
 * call hierarchy (prepareCallHierarchy + outgoing calls) is the truth, counting only static calls
 * (a call, `new` or tagged template whose callee resolves to a declaration; property reads, JSX and
 * decorators are out) to functions and methods that are symbols too. Calls inside a nested function
 * that is not a symbol count for its enclosing symbol, as in the graph. Precision and recall are
 * printed for function targets and method targets separately.
 *
 * The language service's call hierarchy is completed by its go-to-definition (`--hierarchy-only`
 * leaves that out): a static call whose callee go-to-definition places on a function or method of
 * ours is a call of it. The call hierarchy drops some real calls: it prepares an item for a function
 * assigned to a class property (`static create = (…) => …`) but its outgoing calls never reach it
 * (resolveCallHierarchyDeclaration follows the callee's symbol to the PropertyDeclaration and accepts
 * only a VariableDeclaration there), nor a call through a value holding a function declared elsewhere
 * (`const stringType = ZodString.create; stringType()`), which go-to-definition resolves by the
 * call's signature. Both sides are counted the same way; the count of edges only go-to-definition
 * found is printed.
 */
import { execFile } from 'node:child_process';
import { cp, mkdtemp, readdir, readFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { promisify } from 'node:util';
import { Project, ts } from 'ts-morph';
import { repositoryProgram } from '../src/cli/index/checker';
import type { ParsedFile } from '../src/cli/index/parse';
import { calleeOf, parseFile, SOURCE_EXTENSIONS } from '../src/cli/index/parse';
import { declarationIndex, edgesOf, keyOfDeclaration } from '../src/cli/index/resolve';
import { unwrap } from '../src/cli/index/syntax';
import { symbolKey } from '../src/code/keys';
import { numberOption } from './lib/measure';

const exec = promisify(execFile);
const ROOT = path.resolve(__dirname, '..');

const isSource = (file: string) =>
  SOURCE_EXTENSIONS.some((ext) => file.endsWith(ext)) && !file.endsWith('.d.ts') && !file.includes('node_modules/');

/** The repository's source files: git's tracked files, or a walk when it is no git work tree (a package). */
async function sourceFiles(root: string): Promise<string[]> {
  try {
    const { stdout } = await exec('git', ['ls-files', '-z'], { cwd: root, maxBuffer: 256 * 1024 * 1024 });
    const files = stdout.split('\0').filter((file) => file.length > 0 && isSource(file));
    if (files.length > 0) return files;
  } catch {
    // not a git work tree
  }
  const entries = await readdir(root, { recursive: true, withFileTypes: true });
  return entries
    .filter((entry) => entry.isFile())
    .map((entry) => path.relative(root, path.join(entry.parentPath, entry.name)).split(path.sep).join('/'))
    .filter(isSource);
}

const mb = (bytes: number) => `${(bytes / 1024 / 1024).toFixed(0)} MB`;

/** The deepest node of `source` spanning exactly [start, end), else undefined. */
function nodeAt(source: ts.SourceFile, start: number, end: number): ts.Node | undefined {
  let found: ts.Node | undefined;
  const visit = (node: ts.Node) => {
    if (node.getStart(source) > start || node.getEnd() < end) return;
    if (node.getStart(source) === start && node.getEnd() === end) found = node;
    ts.forEachChild(node, visit);
  };
  visit(source);
  return found;
}

interface Counts {
  truth: number;
  found: number;
  hit: number;
}

export async function run(args: string[]): Promise<void> {
  const dirArg = args.find((arg, i) => !arg.startsWith('--') && !args[i - 1]?.startsWith('--'));
  const copies = numberOption(args, 'copies', 1);
  const byDefinition = !args.includes('--hierarchy-only');
  // Index as tsc would, node_modules types loaded (the indexer leaves them out; see checker.ts).
  const libraries = args.includes('--libraries');
  let root = path.resolve(dirArg ?? ROOT);
  if (copies > 1) {
    const tree = await mkdtemp(path.join(tmpdir(), 'weft-code-copies-'));
    const files = await sourceFiles(root);
    for (let i = 0; i < copies; i++) {
      for (const file of files) await cp(path.join(root, file), path.join(tree, `copy${i}`, file));
    }
    root = tree;
  }
  const files = await sourceFiles(root);
  const texts = new Map<string, string>();
  for (const file of files) texts.set(file, await readFile(path.join(root, file), 'utf8'));
  const known = new Set(texts.keys());
  console.log(`${root}: ${texts.size} source files, ${[...texts.values()].join('').split('\n').length} lines\n`);

  // Anchor: the parser alone, names only (the indexer before the checker). CPU time beside wall
  // time: on a shared machine the wall time swings with the load, the CPU time much less.
  const cpuMs = () => {
    const usage = process.cpuUsage();
    return (usage.user + usage.system) / 1000;
  };
  let started = performance.now();
  let cpuStarted = cpuMs();
  const plain = [...texts].flatMap(([file, text]) => parseFile(file, text, known) ?? []);
  const byName = edgesOf(plain);
  const anchorMs = performance.now() - started;
  const anchorCpu = cpuMs() - cpuStarted;

  started = performance.now();
  cpuStarted = cpuMs();
  const program = repositoryProgram(root, texts, { libraries });
  const parsed: ParsedFile[] = [...texts].flatMap(
    ([file, text]) => parseFile(file, text, known, program.sourceOf(file)) ?? [],
  );
  const programMs = performance.now() - started;
  const edges = edgesOf(parsed, program);
  const subjectMs = performance.now() - started;
  const subjectCpu = cpuMs() - cpuStarted;
  console.log(`program and parse: ${programMs.toFixed(0)} ms, resolution: ${(subjectMs - programMs).toFixed(0)} ms`);
  const memory = process.memoryUsage();
  const calls = edges.filter((edge) => edge.type === 'CALLS');
  console.log('| resolution | files | edges | CALLS (by name) | wall ms | ratio | CPU ms | ratio |');
  console.log('| --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: |');
  console.log(
    `| names only (anchor) | ${plain.length} | ${byName.length} | ${byName.filter((e) => e.type === 'CALLS').length} ` +
      `| ${anchorMs.toFixed(0)} | 1.00 | ${anchorCpu.toFixed(0)} | 1.00 |`,
  );
  console.log(
    `| type checker${libraries ? ' (libraries loaded)' : ''} | ${parsed.length} | ${edges.length} | ${calls.length} ` +
      `(${calls.filter((e) => e.resolution === 'name').length}) | ${subjectMs.toFixed(0)} | ` +
      `${(subjectMs / anchorMs).toFixed(2)} | ${subjectCpu.toFixed(0)} | ${(subjectCpu / anchorCpu).toFixed(2)} |`,
  );
  // The peak so far is the indexer's (the names-only anchor and the program): the language service
  // of the truth is built after this line.
  const peak = process.resourceUsage().maxRSS * 1024;
  console.log(`\nmemory after indexing: heap ${mb(memory.heapUsed)}, rss ${mb(memory.rss)}, peak rss ${mb(peak)}`);
  if (copies > 1) return;

  const kinds = new Map<string, string>();
  for (const file of parsed) for (const s of file.symbols) kinds.set(symbolKey(s.kind, s.path, s.name), s.kind);
  // An interface member has no item in the language service's call hierarchy: counted apart.
  const ofInterface = (key: string) => kinds.get(key.slice(0, key.lastIndexOf('.'))) === 'interface';
  const callable = (key: string) => kinds.get(key) === 'function' || (kinds.get(key) === 'method' && !ofInterface(key));

  // The truth: the language service's outgoing calls of each function and method that has a body,
  // over a full program of the same texts (node_modules types loaded, as an editor has them).
  const full = languageServiceOf(root, texts);
  const service = full.project.getLanguageService().compilerObject;
  const truth = new Set<string>();
  const sources = new Set<string>();
  // The keys today's measure knows (issue 30's shapes: top-level functions, classes' and interfaces'
  // members); the graph's newer symbols (issue 45) are measured by allCalls below.
  const shapeKeys = new Set<string>();
  let definitionOnly = 0;
  for (const file of parsed) {
    const source = program.sourceOf(file.path);
    if (!source) continue;
    const visit = (node: ts.Node) => {
      const name = (node as ts.NamedDeclaration).name;
      const key = keyOfDeclaration(node, program.pathOf);
      if (key) shapeKeys.add(key);
      // An overload's signature has no body (and no outgoing calls): the implementation is the item.
      // An interface merged with a function of its name (zod's `$constructor`) shares its key: the
      // function is the item.
      const bodiless =
        ((ts.isFunctionDeclaration(node) || ts.isMethodDeclaration(node)) && !node.body) ||
        ts.isInterfaceDeclaration(node);
      if (key && callable(key) && file.calls.has(key) && name && !bodiless && !sources.has(key)) {
        sources.add(key);
        for (const target of outgoing(service, full, source, node)) {
          if (callable(target) && target !== key) truth.add(`${key}\u0000${target}`);
        }
        for (const target of byDefinition ? definitionCalls(service, full, source, node) : []) {
          const edge = `${key}\u0000${target}`;
          if (callable(target) && target !== key && !truth.has(edge)) {
            truth.add(edge);
            definitionOnly++;
          }
        }
      }
      ts.forEachChild(node, visit);
    };
    visit(source);
  }
  // A nested symbol's calls count for the enclosing item here, as the call hierarchy's outgoing calls
  // of that item include them.
  const parents = new Map(parsed.flatMap((file) => [...file.parents]));
  const fold = (key: string) => {
    let at: string | undefined = key;
    while (at !== undefined && !sources.has(at)) at = parents.get(at);
    return at;
  };
  const graph = new Set(
    calls.flatMap((e) => {
      const source = fold(e.source);
      const counted = source !== undefined && source !== e.target && shapeKeys.has(e.target) && callable(e.target);
      return counted ? [`${source}\u0000${e.target}`] : [];
    }),
  );

  const counts = { function: { truth: 0, found: 0, hit: 0 }, method: { truth: 0, found: 0, hit: 0 } };
  const misses: string[] = [];
  const extras: string[] = [];
  for (const edge of truth) {
    const c: Counts = counts[kinds.get(edge.split('\u0000')[1] as string) as 'function' | 'method'];
    c.truth++;
    if (graph.has(edge)) c.hit++;
    else misses.push(edge);
  }
  for (const edge of graph) {
    counts[kinds.get(edge.split('\u0000')[1] as string) as 'function' | 'method'].found++;
    if (!truth.has(edge)) extras.push(edge);
  }
  console.log('\n| calls to | language service | graph | both | precision | recall |');
  console.log('| --- | ---: | ---: | ---: | ---: | ---: |');
  for (const [kind, c] of Object.entries(counts)) {
    console.log(
      `| ${kind}s | ${c.truth} | ${c.found} | ${c.hit} | ${(c.hit / c.found).toFixed(3)} | ` +
        `${(c.hit / c.truth).toFixed(3)} |`,
    );
  }
  const toInterfaces = calls.filter(
    (e) => sources.has(e.source) && kinds.get(e.target) === 'method' && ofInterface(e.target),
  );
  console.log(`\ncalls to interface members (no language-service item, not counted above): ${toInterfaces.length}`);
  console.log(
    byDefinition
      ? `language-service edges found by go-to-definition only (not by the call hierarchy): ${definitionOnly}`
      : 'the call hierarchy alone (--hierarchy-only): go-to-definition not consulted',
  );
  const show = (label: string, list: string[]) =>
    list.length > 0 &&
    console.log(
      `\n${label} (${list.length}, first 15):\n${list
        .slice(0, 15)
        .map((e) => `  ${e.replace('\u0000', ' → ')}`)
        .join('\n')}`,
    );
  show('in the graph only', extras);
  show('in the language service only', misses);
  allCalls(
    parsed,
    full,
    service,
    edges.filter((e) => e.type === 'CALLS' || e.type === 'TESTS'),
    kinds,
    show,
  );
}

/**
 * Recall against every static call edge of the language service, whatever its ends are: each call,
 * `new` or tagged template anywhere in a file (a module initializer, a describe body, a nested
 * function…) whose callee go-to-definition places on a function or method of the repository (a
 * function-like declaration, or a variable or property holding one; classes are out). Its caller is
 * the graph symbol whose calls the site is among (or, when none, the site's innermost enclosing
 * function, a miss); its target the declaration's key (or its position when it has none, a miss).
 * Precision over the graph's CALLS/TESTS edges to functions and methods that are not `union` edges
 * (those are counted apart: the language service names no target for `detectors[name]()`).
 */
function allCalls(
  parsed: readonly ParsedFile[],
  full: FullProgram,
  service: ts.LanguageService,
  calls: readonly { source: string; target: string; resolution?: string }[],
  kinds: ReadonlyMap<string, string>,
  show: (label: string, list: string[]) => unknown,
) {
  const compiled = full.project.getProgram().compilerObject;
  const index = declarationIndex(parsed);
  const owners = new Map<string, string>();
  for (const file of parsed) {
    for (const [key, refs] of file.calls)
      for (const ref of refs) owners.set(`${file.path}:${ref.site.getStart()}`, key);
  }
  const callable = (key: string | undefined) =>
    key !== undefined && (kinds.get(key) === 'function' || kinds.get(key) === 'method');
  const truth = new Set<string>();
  for (const file of parsed) {
    const from = full.project.getSourceFile(path.join(full.root, file.path))?.compilerNode;
    if (!from) continue;
    const visit = (node: ts.Node) => {
      const callee = calleeOf(node);
      const at = callee && (ts.isPropertyAccessExpression(callee) ? callee.name : callee);
      if (at && (ts.isIdentifier(at) || ts.isPrivateIdentifier(at))) {
        for (const definition of service.getDefinitionAtPosition(from.fileName, at.getStart(from)) ?? []) {
          const to = compiled.getSourceFile(definition.fileName);
          const toPath = to && full.pathOf(to);
          const span = definition.textSpan;
          const found = toPath !== undefined && to && nodeAt(to, span.start, span.start + span.length);
          const target = found && (ts.isFunctionLike(found) ? found : found.parent);
          if (!target || !holdsFunction(target)) continue;
          const targetId = keyOfDeclaration(target, full.pathOf, index) ?? `${toPath}:${target.getStart(to)}`;
          let caller = owners.get(`${file.path}:${node.getStart(from)}`);
          if (!caller) {
            let up: ts.Node = node.parent;
            while (!ts.isSourceFile(up) && !ts.isFunctionLike(up)) up = up.parent;
            caller = `${file.path}:${up.getStart(from)}`;
          }
          if (caller !== targetId) truth.add(`${caller}\u0000${targetId}`);
        }
      }
      ts.forEachChild(node, visit);
    };
    visit(from);
  }
  const counted = calls.filter((e) => callable(e.target) && e.resolution !== 'union');
  const graph = new Set(counted.map((e) => `${e.source}\u0000${e.target}`));
  const keyed = [...truth].filter((edge) => {
    const [source, target] = edge.split('\u0000') as [string, string];
    return kinds.has(source) && callable(target);
  });
  const hits = [...truth].filter((edge) => graph.has(edge)).length;
  const unions = calls.filter((e) => e.resolution === 'union').length;
  console.log(
    '\n| every static call (language service) | edges | with both ends symbols | graph | both | precision | recall |',
  );
  console.log('| --- | ---: | ---: | ---: | ---: | ---: | ---: |');
  console.log(
    `| all | ${truth.size} | ${keyed.length} | ${graph.size} | ${hits} | ${(hits / graph.size).toFixed(3)} | ` +
      `${(hits / truth.size).toFixed(3)} |`,
  );
  console.log(`union edges (element access over a record of functions, not counted above): ${unions}`);
  const byCause = new Map<string, number>();
  for (const edge of truth) {
    if (graph.has(edge)) continue;
    const [source, target] = edge.split('\u0000') as [string, string];
    const cause = !kinds.has(source) ? 'caller has no node' : !callable(target) ? 'target has no node' : 'no edge';
    byCause.set(cause, (byCause.get(cause) ?? 0) + 1);
  }
  console.log(`misses by cause: ${[...byCause].map(([cause, n]) => `${cause} ${n}`).join(', ') || 'none'}`);
  show(
    'every static call: in the language service only',
    [...truth].filter((edge) => !graph.has(edge)),
  );
  show(
    'every static call: in the graph only',
    [...graph].filter((edge) => !truth.has(edge)),
  );
}

/**
 * A function-like declaration (an interface's construct signature too: `new ZodString(def)` through
 * a `$constructor` value), or a variable, property or property signature holding a function.
 */
function holdsFunction(node: ts.Node): boolean {
  if (ts.isClassLike(node) || ts.isConstructorDeclaration(node)) return false;
  if (ts.isFunctionLike(node)) return true;
  if (ts.isVariableDeclaration(node) || ts.isPropertyDeclaration(node) || ts.isPropertyAssignment(node)) {
    // Cast or wrapped (`((…) => …) as Validate`): still a function.
    return node.initializer !== undefined && ts.isFunctionLike(unwrap(node.initializer));
  }
  return ts.isPropertySignature(node) && node.type !== undefined && ts.isFunctionTypeNode(node.type);
}

interface FullProgram {
  project: Project;
  root: string;
  pathOf(source: ts.SourceFile): string | undefined;
}

/** A ts-morph project over `texts` with everything tsc would load: the truth's language service. */
function languageServiceOf(root: string, texts: ReadonlyMap<string, string>): FullProgram {
  const tsconfig = path.join(root, 'tsconfig.json');
  const overrides: ts.CompilerOptions = { allowJs: true, noEmit: true, skipLibCheck: true };
  let project: Project | undefined;
  try {
    project = new Project({
      tsConfigFilePath: tsconfig,
      skipAddingFilesFromTsConfig: true,
      compilerOptions: overrides,
    });
  } catch {
    project = new Project({
      compilerOptions: {
        target: ts.ScriptTarget.ES2022,
        module: ts.ModuleKind.NodeNext,
        moduleResolution: ts.ModuleResolutionKind.NodeNext,
        jsx: ts.JsxEmit.Preserve,
        checkJs: true,
        esModuleInterop: true,
        resolveJsonModule: true,
        ...overrides,
      },
    });
  }
  for (const [file, text] of texts) project.createSourceFile(path.join(root, file), text, { overwrite: true });
  const rootPosix = root.split(path.sep).join(path.posix.sep);
  return {
    project,
    root,
    pathOf: (source) => {
      const file = path.relative(rootPosix, source.fileName).split(path.sep).join(path.posix.sep);
      return file.startsWith('..') || file.includes('node_modules/') ? undefined : file;
    },
  };
}

/** Where the language service's call hierarchy has an item: a named or assigned function-like declaration. */
function itemPositions(source: ts.SourceFile, declaration: ts.Node): number[] {
  const positions: number[] = [];
  const visit = (node: ts.Node) => {
    const name = (node as ts.NamedDeclaration).name;
    if (ts.isFunctionLike(node) && name) positions.push(name.getStart(source));
    else if ((ts.isArrowFunction(node) || ts.isFunctionExpression(node)) && ts.isVariableDeclaration(node.parent)) {
      positions.push(node.parent.name.getStart(source));
    }
    ts.forEachChild(node, visit);
  };
  const name = (declaration as ts.NamedDeclaration).name as ts.Node;
  positions.push(name.getStart(source));
  ts.forEachChild(declaration, visit);
  return positions;
}

/**
 * The keys a declaration calls per the language service: its outgoing static calls, and those of
 * every nested function (in the graph, a nested function's calls belong to the enclosing symbol).
 */
function outgoing(
  service: ts.LanguageService,
  program: FullProgram,
  from: ts.SourceFile,
  declaration: ts.Node,
): string[] {
  const targets: string[] = [];
  const compiled = program.project.getProgram().compilerObject;
  const seen = new Set<string>();
  for (const position of itemPositions(from, declaration)) {
    const items = service.prepareCallHierarchy(from.fileName, position);
    for (const item of Array.isArray(items) ? items : items ? [items] : []) {
      const id = `${item.file}:${item.selectionSpan.start}`;
      if (seen.has(id)) continue;
      seen.add(id);
      for (const call of service.provideCallHierarchyOutgoingCalls(from.fileName, item.selectionSpan.start)) {
        const isStatic = call.fromSpans.some((span) => {
          const node = nodeAt(from, span.start, span.start + span.length);
          return node !== undefined && calleeOf(node.parent) === node;
        });
        const to = compiled.getSourceFile(call.to.file);
        const span = call.to.selectionSpan;
        const target = to && nodeAt(to, span.start, span.start + span.length)?.parent;
        const key = target && keyOfDeclaration(target, program.pathOf);
        if (isStatic && key) targets.push(key);
      }
    }
  }
  return targets;
}

/**
 * The keys that `declaration` calls statically by the language service's go-to-definition on each
 * callee (a call, `new` or tagged template): the function-like declaration it lands on, or the
 * declaration holding it (a variable or class property with a function initializer). Nested functions
 * count for the enclosing declaration.
 */
function definitionCalls(
  service: ts.LanguageService,
  program: FullProgram,
  from: ts.SourceFile,
  declaration: ts.Node,
): string[] {
  const compiled = program.project.getProgram().compilerObject;
  const targets: string[] = [];
  const visit = (node: ts.Node) => {
    const callee = calleeOf(node);
    const at = callee && (ts.isPropertyAccessExpression(callee) ? callee.name : callee);
    if (at && (ts.isIdentifier(at) || ts.isPrivateIdentifier(at))) {
      for (const definition of service.getDefinitionAtPosition(from.fileName, at.getStart(from)) ?? []) {
        const to = compiled.getSourceFile(definition.fileName);
        const span = definition.textSpan;
        const found = to && nodeAt(to, span.start, span.start + span.length);
        const target = found && (ts.isFunctionLike(found) ? found : found.parent);
        if (!target || !(ts.isFunctionLike(target) || ts.isVariableDeclaration(target))) continue;
        if (ts.isVariableDeclaration(target) && !(target.initializer && ts.isFunctionLike(target.initializer)))
          continue;
        const key = keyOfDeclaration(target, program.pathOf);
        if (key) targets.push(key);
      }
    }
    ts.forEachChild(node, visit);
  };
  ts.forEachChild(declaration, visit);
  return targets;
}
