import { mkdtempSync, realpathSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { expect } from 'chai';
import { repositoryProgram } from '../../src/cli/index/checker';
import { parseFile, resolveImport } from '../../src/cli/index/parse';
import type { ResolvedEdge } from '../../src/cli/index/resolve';
import { edgesOf } from '../../src/cli/index/resolve';

/** `weft index`'s resolution over in-memory files (a scratch root without tsconfig: inferred options). */
function index(files: Record<string, string>, typed = true): ResolvedEdge[] {
  const root = realpathSync(mkdtempSync(path.join(tmpdir(), 'weft-resolve-')));
  const texts = new Map(Object.entries(files));
  const known = new Set(texts.keys());
  const program = typed ? repositoryProgram(root, texts) : undefined;
  const parsed = [...texts].map(([file, text]) => {
    const one = parseFile(file, text, known, program?.sourceOf(file));
    if (!one) throw new Error(`${file} does not parse`);
    return one;
  });
  return edgesOf(parsed, program);
}

const from = (edges: ResolvedEdge[], source: string, type = 'CALLS') =>
  edges
    .filter((edge) => edge.source === source && edge.type === type)
    .map((edge) => `${edge.target} (${edge.resolution})`)
    .sort();

describe('weft index: call resolution by the type checker', function () {
  // A program per case: the checker loads the standard library each time.
  this.timeout(60_000);

  it('a method call goes to the declaration of its receiver’s type, not to a same-named method', () => {
    const edges = index({
      'src/a.ts': 'export class A {\n  json() { return 1; }\n}\n',
      'src/b.ts': 'export class B {\n  json() { return 2; }\n  get(k: string) { return k; }\n}\n',
      'src/use.ts':
        "import { B } from './b';\n" +
        'export function use(b: B, url: URL) {\n  url.searchParams.get("x");\n  return b.json();\n}\n',
    });
    // `url.searchParams.get()` is the standard library's, never B.get (the old "only one class" guess).
    expect(from(edges, 'src/use.ts#use')).to.deep.equal(['src/b.ts#B.json (type)']);
  });

  it('follows re-exports (`export *`, `export { x as y } from`) and import aliases to the declaration', () => {
    const edges = index({
      'src/impl/math.ts': 'export function add(a: number, b: number) {\n  return a + b;\n}\n',
      'src/impl/index.ts': "export * from './math';\n",
      'src/api.ts': "export { add as plus } from './impl/';\n",
      'src/main.ts': "import { plus as sum } from './api';\nexport function main() {\n  return sum(1, 2);\n}\n",
    });
    expect(from(edges, 'src/main.ts#main')).to.deep.equal(['src/impl/math.ts#add (type)']);
  });

  it('follows `this.m()` to a base class, and links an override to it', () => {
    const edges = index({
      'src/base.ts': 'export class Base {\n  hello() { return 1; }\n  name() { return "b"; }\n}\n',
      'src/derived.ts':
        "import { Base } from './base';\nexport class Derived extends Base {\n" +
        '  override name() { return "d"; }\n  greet() { return this.hello(); }\n}\n',
    });
    expect(from(edges, 'src/derived.ts#Derived.greet')).to.deep.equal(['src/base.ts#Base.hello (type)']);
    expect(from(edges, 'src/derived.ts#Derived.name', 'OVERRIDES')).to.deep.equal(['src/base.ts#Base.name (type)']);
  });

  it('links a call through an interface to its member, and implementations by IMPLEMENTS', () => {
    const edges = index({
      'src/store.ts': 'export interface Store {\n  save(x: string): void;\n}\n',
      'src/memory.ts':
        "import type { Store } from './store';\nexport class MemoryStore implements Store {\n  save(x: string) {}\n}\n",
      'src/run.ts': "import type { Store } from './store';\nexport function run(s: Store) {\n  s.save('a');\n}\n",
    });
    expect(from(edges, 'src/run.ts#run')).to.deep.equal(['src/store.ts#Store.save (type)']);
    expect(from(edges, 'src/memory.ts#MemoryStore.save', 'IMPLEMENTS')).to.deep.equal([
      'src/store.ts#Store.save (type)',
    ]);
    expect(edges).to.deep.include({
      type: 'CONTAINS',
      source: 'src/store.ts#Store',
      target: 'src/store.ts#Store.save',
    });
  });

  it('a call through a value holding a function goes to that function; a static arrow property is a method', () => {
    const edges = index({
      'src/types.ts':
        'export class ZodString {\n  static create = (min?: number) => new ZodString();\n}\n' +
        'export const stringType = ZodString.create;\n',
      'src/use.ts':
        "import { stringType, ZodString } from './types';\n" +
        'export const ostring = () => stringType(1);\nexport function direct() {\n  return ZodString.create();\n}\n',
    });
    expect(from(edges, 'src/use.ts#ostring')).to.deep.equal(['src/types.ts#ZodString.create (type)']);
    expect(from(edges, 'src/use.ts#direct')).to.deep.equal(['src/types.ts#ZodString.create (type)']);
  });

  it('counts the calls in parameters’ default values for their function', () => {
    const edges = index({
      'src/time.ts': 'export const nowSeconds = () => Math.floor(Date.now() / 1000);\n',
      'src/sign.ts':
        "import { nowSeconds } from './time';\n" +
        'export const header = (secret: string, t = nowSeconds()) => `${t}.${secret}`;\n',
    });
    expect(from(edges, 'src/sign.ts#header')).to.deep.equal(['src/time.ts#nowSeconds (type)']);
  });

  it('a tagged template is a call of its tag', () => {
    const edges = index({
      'src/html.ts':
        'export function html(parts: TemplateStringsArray, ...values: unknown[]) {\n  return parts.join("");\n}\n',
      'src/page.ts': "import { html } from './html';\nexport const page = () => html`<p>$" + '{1}</p>`;\n',
    });
    expect(from(edges, 'src/page.ts#page')).to.deep.equal(['src/html.ts#html (type)']);
  });

  it('a local or parameter named like an import is not the import', () => {
    const edges = index({
      'src/fmt.ts': 'export function format(x: number) {\n  return String(x);\n}\n',
      'src/use.ts':
        "import { format } from './fmt';\n" +
        'export function viaParameter(format: (x: number) => string) {\n  return format(1);\n}\n' +
        'export function viaLocal() {\n  const format = (x: number) => String(x + 1);\n  return format(2);\n}\n' +
        'export function viaImport() {\n  return format(3);\n}\n',
    });
    expect(from(edges, 'src/use.ts#viaParameter')).to.deep.equal([]);
    // The local is a nested function of its own (issue 45), never the import.
    expect(from(edges, 'src/use.ts#viaLocal')).to.deep.equal(['src/use.ts#viaLocal.format (type)']);
    expect(from(edges, 'src/use.ts#viaImport')).to.deep.equal(['src/fmt.ts#format (type)']);
  });

  it("resolves `'./'` and `'../'` to the directory's index", () => {
    const files = new Set(['src/index.ts', 'src/lib/x.ts', 'src/lib/index.ts']);
    expect(resolveImport('src/lib/x.ts', '../', files)).to.equal('src/index.ts');
    expect(resolveImport('src/lib/x.ts', './', files)).to.equal('src/lib/index.ts');
    expect(resolveImport('src/lib/x.ts', '.', files)).to.equal('src/lib/index.ts');
    const edges = index(
      {
        'src/index.ts': 'export function root() {\n  return 1;\n}\n',
        'src/lib/x.ts': "import { root } from '../';\nexport function x() {\n  return root();\n}\n",
      },
      false,
    );
    expect(from(edges, 'src/lib/x.ts#x')).to.deep.equal(['src/index.ts#root (name)']);
  });

  it('falls back to names only where the checker cannot type the callee, and says so', () => {
    const edges = index({
      'src/util.js': 'export function helper() {\n  return 1;\n}\n',
      'src/main.js':
        "import { helper } from './util.js';\nexport function main(x) {\n  x.helper();\n  return helper();\n}\n",
    });
    // JavaScript is typed too (allowJs); `x.helper()` on an untyped parameter resolves to nothing.
    expect(from(edges, 'src/main.js#main')).to.deep.equal(['src/util.js#helper (type)']);
    const untyped = index(
      { 'src/a.ts': 'export function a() {\n  return b();\n}\nexport function b() {\n  return 1;\n}\n' },
      false,
    );
    expect(from(untyped, 'src/a.ts#a')).to.deep.equal(['src/a.ts#b (name)']);
  });
});
