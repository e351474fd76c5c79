import { readFileSync } from 'node:fs';
import { expect } from 'chai';
import { markedSection, renderRlsSection, SECURITY_DOC } from '../scripts/rls-doc';
import { getStack } from './helpers/stack';

describe('docs/security.md: every table’s policy', () => {
  it('the committed section is what the catalog says (else run `npx tsx scripts/rls-doc.ts`)', async () => {
    // The test database is freshly migrated, so its catalog is what the migrations make.
    const { config, ownerDataSource } = getStack();
    const appRole = decodeURIComponent(new URL(config.DATABASE_URL).username);
    const section = await renderRlsSection((sql, params) => ownerDataSource.query(sql, params), appRole);
    expect(markedSection(readFileSync(SECURITY_DOC, 'utf8'))).to.equal(section);
  });
});
