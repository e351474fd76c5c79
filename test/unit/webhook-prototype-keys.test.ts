import { expect } from 'chai';
import { parseBodyForFilter } from '../../src/triggers/filter';
import { createFilterPool } from '../../src/triggers/filter-pool';
import { headerRecord, pairsOf } from '../../src/triggers/headers';

const trigger = { id: 't', slug: 'hook' };
const pool = createFilterPool();
after(() => pool.close());

describe('webhook intake: fields and headers named like Object members', () => {
  it('parses form fields named constructor, toString and __proto__ as plain fields', async () => {
    const form = parseBodyForFilter(
      Buffer.from('constructor=a&toString=b&__proto__=c&__proto__=d&hasOwnProperty=e'),
      'application/x-www-form-urlencoded',
    ) as Record<string, unknown>;
    expect(Object.keys(form)).to.deep.equal(['constructor', 'toString', '__proto__', 'hasOwnProperty']);
    expect(form.constructor).to.equal('a');
    expect(form.toString).to.equal('b');
    expect(form.__proto__).to.deep.equal(['c', 'd']);
    expect(JSON.parse(JSON.stringify(form))).to.deep.equal({
      constructor: 'a',
      toString: 'b',
      ['__proto__']: ['c', 'd'],
      hasOwnProperty: 'e',
    });
    const body = parseBodyForFilter(Buffer.from('x=1'), 'application/x-www-form-urlencoded');
    // A filter reading a member the sender did not send sees nothing, not an inherited function.
    expect((await pool.evaluate('body.constructor', { headers: {}, body, trigger })).result).to.equal('not_matched');
  });

  it('keeps headers named constructor or __proto__ as sent, joining only repeats', async () => {
    const headers = headerRecord(pairsOf(['Constructor', 'a', '__proto__', 'b', 'X-Twice', '1', 'x-twice', '2']));
    expect(Object.keys(headers)).to.deep.equal(['constructor', '__proto__', 'x-twice']);
    expect(headers.constructor).to.equal('a');
    expect(headers.__proto__).to.equal('b');
    expect(headers['x-twice']).to.equal('1, 2');
    expect(headerRecord([]).toString).to.equal(undefined);
    const empty = { headers: headerRecord([]), body: {}, trigger };
    expect((await pool.evaluate('headers.constructor', empty)).result).to.equal('not_matched');
    expect((await pool.evaluate('body.toString', empty)).result).to.equal('not_matched');
  });
});
