/**
 * `npm run lint`'s OpenAPI step: builds the document from the route list (no database, no
 * Temporal), writes it to a temporary file and runs Spectral with `.spectral.yaml` over it.
 * Fails on any error or warning.
 */
import { spawnSync } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { offlineOpenApiDocument } from '../src/app/openapi';

const root = path.resolve(__dirname, '..');
const dir = mkdtempSync(path.join(tmpdir(), 'weft-openapi-'));
const file = path.join(dir, 'openapi.json');
try {
  writeFileSync(file, JSON.stringify(offlineOpenApiDocument(), null, 2));
  const spectral = spawnSync(
    path.join(root, 'node_modules/.bin/spectral'),
    [
      'lint',
      file,
      '--ruleset',
      path.join(root, '.spectral.yaml'),
      '--fail-severity',
      'warn',
      '--display-only-failures',
    ],
    { stdio: 'inherit' },
  );
  process.exitCode = spectral.status ?? 1;
} finally {
  rmSync(dir, { recursive: true, force: true });
}
