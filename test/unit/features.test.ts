import { existsSync, readdirSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { expect } from 'chai';
import { entities } from '../../src/app/entities';
import { FEATURES } from '../../src/app/features';

const SRC = resolve(__dirname, '../../src');
// Not features: the floors themselves, the generated client and the CLI.
const NOT_FEATURES = new Set(['app', 'platform', 'rules', 'client', 'cli']);
// The roles that only reach the app through a manifest.
const COMPOSED_ROLES = ['routes.ts', 'entities.ts', 'outbox-handler.ts', 'capabilities.ts'];

describe('feature manifests (src/<feature>/feature.ts, listed in src/app/features.ts)', () => {
  it('every folder with routes, entities, outbox handlers or capabilities has a manifest in the list', () => {
    const folders = readdirSync(SRC, { withFileTypes: true })
      .filter((entry) => entry.isDirectory() && !NOT_FEATURES.has(entry.name))
      .map((entry) => entry.name)
      .filter((name) => COMPOSED_ROLES.some((role) => existsSync(join(SRC, name, role))));
    expect(folders).to.not.be.empty;
    for (const folder of folders) {
      const file = join(SRC, folder, 'feature.ts');
      expect(existsSync(file), `src/${folder}/feature.ts`).to.equal(true);
      const manifests = Object.values(require(file) as Record<string, unknown>);
      expect(
        manifests.some((manifest) => (FEATURES as readonly unknown[]).includes(manifest)),
        `src/${folder}/feature.ts is in src/app/features.ts`,
      ).to.equal(true);
    }
  });

  it('names each feature once and lists each entity once', () => {
    const names = FEATURES.map((feature) => feature.name);
    expect(new Set(names).size).to.equal(names.length);
    expect(new Set(entities).size).to.equal(entities.length);
  });
});
