import { readFileSync } from 'node:fs';
import { expect } from 'chai';
import { FUNCTIONS_DOC, markedSection, renderFunctionsDoc, renderRlsSection, SECURITY_DOC } from '../scripts/rls-doc';
import { getStack } from './helpers/stack';

// The test database is freshly migrated, so its catalog is what the migrations make.
const catalog = () => {
  const { config, ownerDataSource } = getStack();
  return {
    appRole: decodeURIComponent(new URL(config.DATABASE_URL).username),
    query: (sql: string, params: unknown[]) => ownerDataSource.query(sql, params),
  };
};

describe('docs/security.md: every table’s policy', () => {
  it('the committed section is what the catalog says (else run `npx tsx scripts/rls-doc.ts`)', async () => {
    const { appRole, query } = catalog();
    const section = await renderRlsSection(query, appRole);
    expect(markedSection(readFileSync(SECURITY_DOC, 'utf8'))).to.equal(section);
  });
});

describe('docs/schema-functions.sql: what runs today', () => {
  it('the committed file is every weft_* function as the catalog has it (else run scripts/rls-doc.ts)', async () => {
    const { appRole, query } = catalog();
    const doc = await renderFunctionsDoc(query, appRole);
    // The functions migrations generate from templates are there too, and the one aggregate.
    expect(doc).to.include('CREATE OR REPLACE FUNCTION public.weft_version_node()');
    expect(doc).to.include('CREATE OR REPLACE AGGREGATE public.weft_jsonb_merge(jsonb)');
    expect(readFileSync(FUNCTIONS_DOC, 'utf8')).to.equal(doc);
  });
});
