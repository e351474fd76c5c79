import { readFileSync } from 'node:fs';
import path from 'node:path';
import { expect } from 'chai';
import { clientSchemaSource } from '../../src/client/generate';

describe('the TypeScript client (weft/client)', () => {
  it('has types generated from the current route list: `npm run client:generate` after a route change', async () => {
    const committed = readFileSync(path.resolve(__dirname, '../../src/client/schema.ts'), 'utf8');
    const fresh = await clientSchemaSource();
    expect(committed === fresh, 'src/client/schema.ts is stale: run npm run client:generate').to.equal(true);
  }).timeout(20_000);
});
