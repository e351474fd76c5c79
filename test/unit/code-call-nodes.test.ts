import { mkdtempSync, realpathSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { expect } from 'chai';
import { repositoryProgram } from '../../src/cli/index/checker';
import type { ParsedFile } from '../../src/cli/index/parse';
import { parseFile } from '../../src/cli/index/parse';
import type { ResolvedEdge } from '../../src/cli/index/resolve';
import { edgesOf } from '../../src/cli/index/resolve';

/** Issue 45: the nodes for what calls and is called outside top-level functions and methods. */
function index(files: Record<string, string>): { edges: ResolvedEdge[]; parsed: ParsedFile[] } {
  const root = realpathSync(mkdtempSync(path.join(tmpdir(), 'weft-calls-')));
  const texts = new Map(Object.entries(files));
  const known = new Set(texts.keys());
  const program = repositoryProgram(root, texts);
  const parsed = [...texts].map(([file, text]) => {
    const one = parseFile(file, text, known, program.sourceOf(file));
    if (!one) throw new Error(`${file} does not parse`);
    return one;
  });
  return { edges: edgesOf(parsed, program), parsed };
}

const from = (edges: ResolvedEdge[], source: string, type = 'CALLS') =>
  edges
    .filter((edge) => edge.source === source && edge.type === type)
    .map((edge) => `${edge.target} (${edge.resolution})`)
    .sort();

const containedBy = (edges: ResolvedEdge[], target: string) =>
  edges.filter((edge) => edge.type === 'CONTAINS' && edge.target === target).map((edge) => edge.source);

const kinds = (parsed: ParsedFile[]) =>
  Object.fromEntries(parsed.flatMap((file) => file.symbols.map((s) => [`${s.path}#${s.name}`, s.kind])));

describe('weft index: nodes for every caller and callee (issue 45)', function () {
  this.timeout(60_000);

  it('a nested function is a code.function keyed under its enclosing symbol, contained by it', () => {
    const { edges, parsed } = index({
      'src/a.ts':
        'export function outer() {\n  function helper() {\n    return leaf();\n  }\n' +
        '  const arrow = () => helper();\n  return arrow();\n}\nexport function leaf() {\n  return 1;\n}\n',
    });
    expect(kinds(parsed)).to.include({ 'src/a.ts#outer.helper': 'function', 'src/a.ts#outer.arrow': 'function' });
    expect(containedBy(edges, 'src/a.ts#outer.helper')).to.deep.equal(['src/a.ts#outer']);
    expect(from(edges, 'src/a.ts#outer')).to.deep.equal(['src/a.ts#outer.arrow (type)']);
    expect(from(edges, 'src/a.ts#outer.arrow')).to.deep.equal(['src/a.ts#outer.helper (type)']);
    expect(from(edges, 'src/a.ts#outer.helper')).to.deep.equal(['src/a.ts#leaf (type)']);
  });

  it('the module initializer’s calls belong to the file node', () => {
    const { edges } = index({
      'src/make.ts': 'export function make() {\n  return { n: 1 };\n}\n',
      'src/thing.ts': "import { make } from './make';\nexport const thing = make();\nmake();\n",
    });
    expect(from(edges, 'src/thing.ts')).to.deep.equal(['src/make.ts#make (type)']);
  });

  it('a constructor is `Class.constructor`, with its calls and those of the instance fields’ initializers', () => {
    const { edges, parsed } = index({
      'src/c.ts':
        'export function seed() {\n  return 1;\n}\nexport function init() {\n  return 2;\n}\n' +
        'export class Base {\n  constructor() {\n    init();\n  }\n}\n' +
        'export class C extends Base {\n  private n = seed();\n  constructor() {\n    super();\n  }\n' +
        '  get value() {\n    return init();\n  }\n}\n' +
        'export function build() {\n  return new C();\n}\n',
    });
    expect(kinds(parsed)).to.include({ 'src/c.ts#C.constructor': 'method', 'src/c.ts#C.value': 'method' });
    expect(containedBy(edges, 'src/c.ts#C.constructor')).to.deep.equal(['src/c.ts#C']);
    expect(from(edges, 'src/c.ts#C.constructor')).to.deep.equal(['src/c.ts#Base (type)', 'src/c.ts#seed (type)']);
    expect(from(edges, 'src/c.ts#Base.constructor')).to.deep.equal(['src/c.ts#init (type)']);
    expect(from(edges, 'src/c.ts#C.value')).to.deep.equal(['src/c.ts#init (type)']);
    // `new C()` still calls the class.
    expect(from(edges, 'src/c.ts#build')).to.deep.equal(['src/c.ts#C (type)']);
  });

  it('describe bodies, hooks and it.each tests are code.test callers with TESTS edges', () => {
    const { edges, parsed } = index({
      'src/lib.ts': 'export function setup() {\n  return 1;\n}\nexport function check(n: number) {\n  return n;\n}\n',
      'test/lib.test.ts':
        "import { check, setup } from '../src/lib';\n" +
        "describe('lib', () => {\n  const fixture = setup();\n  beforeEach(() => {\n    setup();\n  });\n" +
        "  it.each([1, 2])('checks %s', (n) => {\n    check(n);\n  });\n" +
        "  it('checks', () => {\n    check(fixture);\n  });\n});\n",
    });
    const file = 'test/lib.test.ts';
    expect(kinds(parsed)).to.include({
      [`${file}#(describe) lib`]: 'test',
      [`${file}#(beforeEach) lib`]: 'test',
      [`${file}#lib › checks %s`]: 'test',
      [`${file}#lib › checks`]: 'test',
    });
    expect(containedBy(edges, `${file}#(beforeEach) lib`)).to.deep.equal([file]);
    expect(from(edges, `${file}#(describe) lib`, 'TESTS')).to.deep.equal(['src/lib.ts#setup (type)']);
    expect(from(edges, `${file}#(beforeEach) lib`, 'TESTS')).to.deep.equal(['src/lib.ts#setup (type)']);
    expect(from(edges, `${file}#lib › checks %s`, 'TESTS')).to.deep.equal(['src/lib.ts#check (type)']);
    expect(from(edges, `${file}#lib › checks`, 'TESTS')).to.deep.equal(['src/lib.ts#check (type)']);
  });

  it('members of inline object types and object-literal functions are code.method callees and callers', () => {
    const { edges, parsed } = index({
      'src/o.ts':
        'export function leaf() {\n  return 1;\n}\n' +
        'export const api = {\n  run() {\n    return leaf();\n  },\n  nested: { go: () => api.run() },\n};\n' +
        'type Deps = { load(): number };\n' +
        'export function use(opts: { fetch: (u: string) => number }, deps: Deps) {\n' +
        "  api.nested.go();\n  deps.load();\n  return opts.fetch('x');\n}\n",
    });
    expect(kinds(parsed)).to.include({
      'src/o.ts#api.run': 'method',
      'src/o.ts#api.nested.go': 'method',
      'src/o.ts#Deps.load': 'method',
      'src/o.ts#use.opts.fetch': 'method',
    });
    expect(from(edges, 'src/o.ts#api.run')).to.deep.equal(['src/o.ts#leaf (type)']);
    expect(from(edges, 'src/o.ts#use')).to.deep.equal([
      'src/o.ts#Deps.load (type)',
      'src/o.ts#api.nested.go (type)',
      'src/o.ts#use.opts.fetch (type)',
    ]);
    expect(containedBy(edges, 'src/o.ts#use.opts.fetch')).to.deep.equal(['src/o.ts#use']);
  });

  it('a factory’s returned object and its return type’s members are the factory’s code.method members', () => {
    const { edges, parsed } = index({
      'src/f.ts':
        'export function leaf() {\n  return 1;\n}\n' +
        'export function createService() {\n  return {\n    run() {\n      return leaf();\n    },\n  };\n}\n' +
        'export const client = () => ({ get: () => leaf() });\n' +
        'export function server(): { stop(): void } {\n  return { stop: () => {} };\n}\n' +
        'export function use() {\n  createService().run();\n  client().get();\n  server().stop();\n}\n',
    });
    expect(kinds(parsed)).to.include({
      'src/f.ts#createService.run': 'method',
      'src/f.ts#client.get': 'method',
      'src/f.ts#server.stop': 'method',
    });
    expect(from(edges, 'src/f.ts#createService.run')).to.deep.equal(['src/f.ts#leaf (type)']);
    expect(from(edges, 'src/f.ts#use')).to.deep.equal([
      'src/f.ts#client (type)',
      'src/f.ts#client.get (type)',
      'src/f.ts#createService (type)',
      'src/f.ts#createService.run (type)',
      'src/f.ts#server (type)',
      'src/f.ts#server.stop (type)',
    ]);
  });

  it('an element access over a record of functions links every member the key allows, as `union`', () => {
    const { edges } = index({
      'src/d.ts':
        'const detectors = {\n  a: (s: string) => s.length,\n' +
        '  b: (s: string) => s.trim().length,\n  c: () => 0,\n};\n' +
        'export function all(name: keyof typeof detectors, s: string) {\n  return detectors[name](s);\n}\n' +
        "export function some(name: 'a' | 'b', s: string) {\n  return detectors[name](s);\n}\n" +
        'const loose: Record<string, (s: string) => number> = {};\n' +
        'export function none(name: string, s: string) {\n  return loose[name](s);\n}\n',
    });
    expect(from(edges, 'src/d.ts#all')).to.deep.equal([
      'src/d.ts#detectors.a (union)',
      'src/d.ts#detectors.b (union)',
      'src/d.ts#detectors.c (union)',
    ]);
    expect(from(edges, 'src/d.ts#some')).to.deep.equal([
      'src/d.ts#detectors.a (union)',
      'src/d.ts#detectors.b (union)',
    ]);
    expect(from(edges, 'src/d.ts#none')).to.deep.equal([]);
  });

  it('a closure cast to an interface member’s type is linked to itself, not to the member', () => {
    const { edges } = index({
      'src/i.ts':
        'export interface Store {\n  save(x: string): void;\n}\n' +
        "export const save = ((x: string) => {}) as Store['save'];\n" +
        "export function run() {\n  save('a');\n}\n",
    });
    expect(from(edges, 'src/i.ts#run')).to.deep.equal(['src/i.ts#save (type)']);
  });

  it('`new X()` through a value typed by an interface’s construct signature calls that signature', () => {
    const { edges } = index({
      'src/k.ts':
        'export interface Ctor<T> {\n  new (def: string): T;\n}\n' +
        'export interface Thing {\n  def: string;\n}\n' +
        'export declare const Thing: Ctor<Thing>;\n' +
        "export function make() {\n  return new Thing('x');\n}\n",
    });
    expect(from(edges, 'src/k.ts#make')).to.deep.equal(['src/k.ts#Ctor.new (type)']);
  });

  it('keys stay the same for the same text (a re-index does not churn)', () => {
    const text =
      "export function outer() {\n  const inner = () => 1;\n  return inner();\n}\ndescribe('x', () => {});\n";
    const once = index({ 'test/k.test.ts': text }).parsed[0]?.symbols;
    const twice = index({ 'test/k.test.ts': text }).parsed[0]?.symbols;
    expect(twice).to.deep.equal(once);
  });
});
