import { expect } from 'chai';
import { pairEvidence, sameEvidence } from '../../src/merges/person-rules';
import { revertProperties } from '../../src/merges/unmerge-apply';

describe('undoing a merge: the pure parts', () => {
  describe("revertProperties (the survivor's properties, three-way)", () => {
    const record = {
      survivor_properties_before: { email: 'a@x', title: 'Dr', aliases: ['A. T.'] },
      survivor_properties_after: {
        email: 'a@x',
        title: 'Dr',
        aliases: ['A. T.', 'alan turing'],
        phone: '123',
        lab: 'Hut 8',
      },
    };

    it('takes back the keys the merge added and restores the ones it changed', () => {
      const reverted = revertProperties(record, { ...record.survivor_properties_after });
      expect(reverted).to.deep.equal({ properties: record.survivor_properties_before, kept: [] });
    });

    it('keeps edits made since the merge, to its keys and to others, and says which of its keys it kept', () => {
      const current = {
        email: 'a@x',
        title: 'Sir',
        aliases: ['A. T.', 'alan turing', 'Prof'],
        phone: '999',
        lab: 'Hut 8',
        office: 'Manchester',
      };
      expect(revertProperties(record, current)).to.deep.equal({
        properties: {
          email: 'a@x',
          title: 'Sir',
          aliases: ['A. T.', 'alan turing', 'Prof'],
          phone: '999',
          office: 'Manchester',
        },
        kept: ['aliases', 'phone'],
      });
    });

    it('leaves a key removed since the merge removed', () => {
      const { lab: _lab, ...current } = record.survivor_properties_after;
      expect(revertProperties(record, current).properties).to.deep.equal(record.survivor_properties_before);
    });
  });

  describe('pairEvidence', () => {
    it('names the keys that matched, with the contract score', () => {
      const evidence = pairEvidence({ email_key: 'a@x', name_key: 'ada' }, { email_key: 'a@x', name_key: 'ada l' });
      expect(evidence).to.deep.equal({ reasons: ['email_match'], score: 0.95, email_key: 'a@x', name_key: null });
      expect(pairEvidence({ email_key: null, name_key: null }, { email_key: null, name_key: null })).to.deep.equal({
        reasons: [],
        score: 0,
        email_key: null,
        name_key: null,
      });
    });

    it('differs when the same reason rests on another key', () => {
      const before = pairEvidence({ email_key: 'a@x', name_key: null }, { email_key: 'a@x', name_key: null });
      const after = pairEvidence({ email_key: 'b@x', name_key: null }, { email_key: 'b@x', name_key: null });
      expect(sameEvidence(before, before)).to.equal(true);
      expect(sameEvidence(before, after)).to.equal(false);
    });
  });
});
