import { expect } from 'chai';
import { parseBodyForFilter } from '../../src/filters/filter';
import { createFilterPool } from '../../src/filters/pool';
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
    // A filter reading a member the sender did not send sees nothing, not an inherited function.
    const sent = { headers: {}, body: Buffer.from('x=1'), contentType: 'application/x-www-form-urlencoded', trigger };
    expect((await pool.evaluate('body.constructor', sent)).result).to.equal('not_matched');
    expect((await pool.evaluate('body.x', sent)).result).to.equal('matched');
    const fields = { ...sent, body: Buffer.from('constructor=a&__proto__=c&__proto__=d') };
    expect((await pool.evaluate("body.constructor == 'a' && body.__proto__[1] == 'd'", fields)).result).to.equal(
      'matched',
    );
    const json = { ...sent, body: Buffer.from('{"__proto__":{"x":1},"a":{}}'), contentType: 'application/json' };
    expect((await pool.evaluate('body.__proto__.x', json)).result).to.equal('matched');
    expect((await pool.evaluate('body.a.toString', json)).result).to.equal('not_matched');
  });

  it('keeps headers named constructor or __proto__ as sent, joining only repeats', async () => {
    const headers = headerRecord(pairsOf(['Constructor', 'a', '__proto__', 'b', 'X-Twice', '1', 'x-twice', '2']));
    expect(Object.keys(headers)).to.deep.equal(['constructor', '__proto__', 'x-twice']);
    expect(headers.constructor).to.equal('a');
    expect(headers.__proto__).to.equal('b');
    expect(headers['x-twice']).to.equal('1, 2');
    expect(headerRecord([]).toString).to.equal(undefined);
    const empty = { headers: headerRecord([]), body: Buffer.from('{}'), contentType: 'application/json', trigger };
    expect((await pool.evaluate('headers.constructor', empty)).result).to.equal('not_matched');
    expect((await pool.evaluate('body.toString', empty)).result).to.equal('not_matched');
  });
});
