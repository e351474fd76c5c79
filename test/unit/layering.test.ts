import { readdirSync, readFileSync } from 'node:fs';
import { dirname, join, relative, resolve } from 'node:path';
import { expect } from 'chai';

const ROOT = resolve(__dirname, '../..');
const PLATFORM = join(ROOT, 'src/platform');
const RULES = join(ROOT, 'src/rules');
const APP = join(ROOT, 'src/app');
/** Entry points under src/ that, like main.ts, workers/ and bench/, stand on the composition wing. */
const ENTRY_POINTS = ['src/cli/main.ts', 'src/client/generate.ts'].map((file) => join(ROOT, file));

function tsFiles(dir: string): string[] {
  return readdirSync(dir, { withFileTypes: true }).flatMap((entry) => {
    const path = join(dir, entry.name);
    if (entry.isDirectory()) return tsFiles(path);
    return entry.name.endsWith('.ts') ? [path] : [];
  });
}

// Every module specifier: `import … from`, `import type … from`, `export … from`, side-effect
// imports, `import()` and `require()`.
const SPECIFIER = /(?:\bfrom\s*|\bimport\s*\(?\s*|\brequire\s*\(\s*)['"]([^'"]+)['"]/g;

function relativeImports(source: string): string[] {
  const withoutComments = source.replace(/\/\*[\s\S]*?\*\//g, '').replace(/^\s*\/\/.*$/gm, '');
  return [...withoutComments.matchAll(SPECIFIER)].map((match) => match[1] ?? '').filter((spec) => spec.startsWith('.'));
}

/** `file → specifier` for every relative import under `dir` that resolves outside `allowed`. */
function importsLeaving(dir: string, allowed: string[]): string[] {
  return tsFiles(dir).flatMap((file) =>
    relativeImports(readFileSync(file, 'utf8'))
      .filter((spec) => {
        const target = resolve(dirname(file), spec);
        return !allowed.some((root) => target === root || target.startsWith(`${root}/`));
      })
      .map((spec) => `${relative(ROOT, file)} → ${spec}`),
  );
}

describe('layering (unit)', () => {
  it('finds the specifiers of every import form', () => {
    const source = [
      "import type { A } from '../a';",
      "import { B,\n  C } from './b';",
      "export { D } from '../../d';",
      "import './side-effect';",
      "const e = await import('../e');",
      "// import { F } from '../f';",
      "import { z } from 'zod';",
    ].join('\n');
    expect(relativeImports(source)).to.deep.equal(['../a', './b', '../../d', './side-effect', '../e']);
  });

  it('src/platform/ imports nothing outside src/platform/ and src/rules/ (type imports included)', () => {
    expect(importsLeaving(PLATFORM, [PLATFORM, RULES])).to.deep.equal([]);
  });

  it('only entry points import src/app/, the composition wing (features describe themselves without it)', () => {
    const below = tsFiles(join(ROOT, 'src')).filter(
      (file) => !file.startsWith(`${APP}/`) && !ENTRY_POINTS.includes(file),
    );
    const violations = below.flatMap((file) =>
      relativeImports(readFileSync(file, 'utf8'))
        .filter((spec) => {
          const target = resolve(dirname(file), spec);
          return target === APP || target.startsWith(`${APP}/`);
        })
        .map((spec) => `${relative(ROOT, file)} → ${spec}`),
    );
    expect(violations).to.deep.equal([]);
  });

  it('src/rules/ (the limits and the prices) imports nothing outside itself', () => {
    expect(importsLeaving(RULES, [RULES])).to.deep.equal([]);
  });
});
