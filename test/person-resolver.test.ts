import { expect } from 'chai';
import { combineProperties, isPersonType, scoreMatch, shouldAutoMerge } from '../src/merges/person-rules';
import { getStack } from './helpers/stack';

// The matching keys are SQL functions (they back partial indexes), so their rules are checked
// through the database; they are pure and need no fixtures.
async function sql<T>(expression: string, value: unknown): Promise<T> {
  const [row] = await getStack().ownerDataSource.query(`SELECT ${expression} AS v`, [value]);
  return row.v as T;
}
const nameKey = (name: string) => sql<string | null>('weft_person_name_key($1)', name);
const emailKey = (properties: unknown) =>
  sql<string | null>('weft_person_email_key($1::jsonb)', JSON.stringify(properties));

describe('person resolver rules', () => {
  describe('score (contract 2.4)', () => {
    it('email and normalised name → 1.00 with both reasons', () => {
      expect(scoreMatch({ email: true, name: true })).to.deep.equal({
        reasons: ['email_match', 'normalized_name_match'],
        score: 1.0,
      });
    });
    it('email only → 0.95', () => {
      expect(scoreMatch({ email: true, name: false })).to.deep.equal({ reasons: ['email_match'], score: 0.95 });
    });
    it('normalised name only → 0.75', () => {
      expect(scoreMatch({ email: false, name: true })).to.deep.equal({
        reasons: ['normalized_name_match'],
        score: 0.75,
      });
    });
    it('neither → no candidate', () => {
      expect(scoreMatch({ email: false, name: false })).to.equal(null);
    });
    it('auto-merges only when enabled and the score reaches the threshold', () => {
      expect(shouldAutoMerge(0.95, { auto_merge_enabled: true, merge_confidence_threshold: 0.9 })).to.equal(true);
      expect(shouldAutoMerge(0.95, { auto_merge_enabled: true, merge_confidence_threshold: 0.95 })).to.equal(true);
      expect(shouldAutoMerge(0.75, { auto_merge_enabled: true, merge_confidence_threshold: 0.9 })).to.equal(false);
      expect(shouldAutoMerge(1.0, { auto_merge_enabled: false, merge_confidence_threshold: 0.9 })).to.equal(false);
    });
  });

  describe('normalised name', () => {
    it('folds case, whitespace and accents', async () => {
      expect(await nameKey('  José   GARCÍA ')).to.equal('jose garcia');
      expect(await nameKey('Zoë Ærøskøbing-Straße')).to.equal('zoe aeroskobing strasse');
      expect(await nameKey('françois\tnuñez')).to.equal('francois nunez');
    });
    it('drops apostrophes and turns other punctuation into a single space', async () => {
      expect(await nameKey("Seán O'Brien")).to.equal('sean obrien');
      expect(await nameKey('Sean O’Brien')).to.equal('sean obrien');
      expect(await nameKey('Jean-Luc Picard')).to.equal(await nameKey('jean luc picard'));
      expect(await nameKey('J.R.R. Tolkien')).to.equal('j r r tolkien');
      expect(await nameKey('Smith, John')).to.equal('smith john');
    });
    it('keeps letters of every script and never matches an empty name', async () => {
      expect(await nameKey('Иван  Петров')).to.equal('иван петров');
      expect(await nameKey('李 小龙')).to.equal('李 小龙');
      expect(await nameKey('...')).to.equal(null);
      expect(await nameKey('   ')).to.equal(null);
    });
  });

  describe('email', () => {
    it('is properties.email trimmed and lower-cased', async () => {
      expect(await emailKey({ email: '  Ada.Lovelace@Example.COM \n' })).to.equal('ada.lovelace@example.com');
    });
    it('ignores missing, empty and non-string values', async () => {
      expect(await emailKey({})).to.equal(null);
      expect(await emailKey({ email: '   ' })).to.equal(null);
      expect(await emailKey({ email: ['a@b.c'] })).to.equal(null);
      expect(await emailKey({ email: 42 })).to.equal(null);
    });
  });

  describe('person types', () => {
    const cases: [string, boolean][] = [
      ['person', true],
      ['contact', true],
      ['employee', true],
      ['crm.person', true],
      ['github:person', true],
      ['organization', false],
      ['personal_note', false],
      ['person_group', false],
      ['code.function', false],
    ];
    it('agree between TypeScript (which events start the resolver) and SQL (which nodes match)', async () => {
      for (const [type, expected] of cases) {
        expect(isPersonType(type), type).to.equal(expected);
        expect(await sql<boolean>('weft_is_person_type($1)', type), type).to.equal(expected);
      }
    });
  });

  describe('combining properties on a merge', () => {
    it('keeps the survivor’s values and copies keys only the duplicate has', () => {
      const combined = combineProperties(
        { name: 'Ada Lovelace', properties: { email: 'ada@example.com', title: 'Countess' } },
        { name: 'Ada Lovelace', properties: { email: 'ADA@example.com', title: 'Mathematician', born: 1815 } },
      );
      expect(combined).to.deep.equal({ email: 'ada@example.com', title: 'Countess', born: 1815 });
    });
    it('records the duplicate’s differing name and aliases in aliases, once each', () => {
      const combined = combineProperties(
        { name: 'Ada Lovelace', properties: { aliases: ['Ada King'] } },
        { name: 'ada lovelace', properties: { aliases: ['Ada King', 'Augusta Ada Byron', 'Ada Lovelace'] } },
      );
      expect(combined.aliases).to.deep.equal(['Ada King', 'Augusta Ada Byron', 'ada lovelace']);
    });
    it('leaves a survivor’s non-list aliases untouched', () => {
      const combined = combineProperties(
        { name: 'A', properties: { aliases: 'free text' } },
        { name: 'B', properties: {} },
      );
      expect(combined.aliases).to.equal('free text');
    });
  });
});
