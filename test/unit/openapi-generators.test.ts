import { execFile } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { promisify } from 'node:util';
import { expect } from 'chai';
import { offlineOpenApiDocument } from '../../src/app/openapi';

const run = promisify(execFile);
const ROOT = path.resolve(__dirname, '../..');
const bin = (name: string) => path.join(ROOT, 'node_modules/.bin', name);

/**
 * Issue 33 item 3: the document stays friendly to generators other than our own (openapi-typescript,
 * `src/client/`). orval generates a fetch client from the offline document into a temporary directory
 * (the tree stays clean), and the strictest settings a consumer may use type-check it together with a
 * few calls a consumer writes: the webhook intake with a raw string body (3.1's `contentMediaType`),
 * and the OAuth grant routes. (hey-api needs TypeScript's JavaScript API, which TypeScript 7 has not.)
 */
describe('OpenAPI: a second generator (orval) makes a client that type-checks', function () {
  this.timeout(120_000);

  it('orval --client fetch, then tsc --strict --noUncheckedIndexedAccess (nodenext)', async () => {
    const dir = mkdtempSync(path.join(tmpdir(), 'weft-orval-'));
    try {
      writeFileSync(path.join(dir, 'openapi.json'), JSON.stringify(offlineOpenApiDocument()));
      await run(bin('orval'), [
        '--input',
        path.join(dir, 'openapi.json'),
        '--output',
        path.join(dir, 'weft.ts'),
        '--client',
        'fetch',
        '--mode',
        'single',
      ]);
      writeFileSync(
        path.join(dir, 'usage.ts'),
        [
          "import { listOAuthGrants, receiveWebhook } from './weft.js';",
          "const delivery = await receiveWebhook('orders', 'a=1&b=2', {",
          "  headers: { 'content-type': 'application/x-www-form-urlencoded', 'x-service-signature': 'sha256=…' },",
          '});',
          'if (delivery.status === 202) console.log(delivery.data.delivery_id);',
          "const grants = await listOAuthGrants('0b6f2d4e-8c1a-4f3b-9d2e-5a7c6b8e9f01');",
          'if (grants.status === 200) console.log(grants.data[0]?.client_name?.toUpperCase());',
          'export {};',
        ].join('\n'),
      );
      writeFileSync(
        path.join(dir, 'tsconfig.json'),
        JSON.stringify({
          compilerOptions: {
            strict: true,
            noUncheckedIndexedAccess: true,
            exactOptionalPropertyTypes: false,
            target: 'es2022',
            lib: ['es2022', 'dom', 'dom.iterable'],
            module: 'nodenext',
            moduleResolution: 'nodenext',
            noEmit: true,
            skipLibCheck: true,
            types: [],
          },
          files: ['weft.ts', 'usage.ts'],
        }),
      );
      // `"type": "module"` so nodenext takes the usage file's top-level await.
      writeFileSync(path.join(dir, 'package.json'), '{"type":"module"}');
      const checked = await run(bin('tsc'), ['-p', path.join(dir, 'tsconfig.json')]).catch((error) => error);
      expect(checked.stdout ?? '', 'tsc found errors').to.equal('');
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });
});
