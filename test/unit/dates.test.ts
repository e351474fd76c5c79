import { expect } from 'chai';
import { iso } from '../../src/platform/dates';

describe('iso (the API date formatter)', () => {
  it('writes a Postgres JSON timestamp as Date would: every fraction length, +00:00 or Z', () => {
    for (const fraction of ['', '.3', '.32', '.328', '.3282', '.32821', '.328215', '.999999']) {
      for (const zone of ['+00:00', 'Z']) {
        for (const day of ['2026-11-28T03:41:38', '1969-12-31T23:59:59', '2000-02-29T00:00:00']) {
          const text = `${day}${fraction}${zone}`;
          expect(iso(text), text).to.equal(new Date(text).toISOString());
        }
      }
    }
  });

  it('takes other offsets and Dates through Date, and keeps null', () => {
    expect(iso('2026-11-28T03:41:38.5+02:00')).to.equal('2026-11-28T01:41:38.500Z');
    expect(iso(new Date(Date.UTC(2026, 10, 28, 3, 41, 38, 7)))).to.equal('2026-11-28T03:41:38.007Z');
    expect(iso(null)).to.equal(null);
    expect(() => iso('not a date')).to.throw(RangeError);
  });
});
