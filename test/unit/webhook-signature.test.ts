import { createHmac } from 'node:crypto';
import { expect } from 'chai';
import { compile } from 'jmespath';
import { fanOut, filterSyntaxError, parseBodyForFilter } from '../../src/filters/filter';
import { createFilterPool } from '../../src/filters/pool';
import { SIGNATURE_SCHEMES, signedHeaders, verifyDelivery } from '../../src/triggers/schemes';
import { parseSignatureHeader, verifySignature } from '../../src/triggers/signature';

const SECRET = 'whsec_test';
const NOW = 1_763_800_000;
const BODY = Buffer.from('{"a":1}');
const hmac = (secret: string, t: number, body: Buffer) =>
  createHmac('sha256', secret).update(`${t}.`).update(body).digest('hex');

describe('webhook signatures (unit)', () => {
  it('verify over the exact bytes, within ±300 s, under the current or the previous secret', () => {
    const header = `t=${NOW},v1=${hmac(SECRET, NOW, BODY)}`;
    expect(verifySignature(header, BODY, [SECRET], NOW)).to.equal(true);
    expect(verifySignature(header, BODY, ['other', SECRET], NOW)).to.equal(true);
    expect(verifySignature(header, Buffer.from('{"a": 1}'), [SECRET], NOW)).to.equal(false);
    expect(verifySignature(header, BODY, ['other'], NOW)).to.equal(false);
    expect(verifySignature(header, BODY, [SECRET], NOW + 300)).to.equal(true);
    expect(verifySignature(header, BODY, [SECRET], NOW - 300)).to.equal(true);
    expect(verifySignature(header, BODY, [SECRET], NOW + 301)).to.equal(false);
    expect(verifySignature(header, BODY, [SECRET], NOW - 301)).to.equal(false);
  });

  it('never throw on digests of any length or case; an uppercase digest does not match', () => {
    const good = hmac(SECRET, NOW, BODY);
    for (const v1 of ['', 'ab', 'zz'.repeat(32), good.toUpperCase(), `${good}00`, good.slice(2)]) {
      expect(verifySignature(`t=${NOW},v1=${v1}`, BODY, [SECRET], NOW), v1).to.equal(false);
    }
    expect(verifySignature(`t=${NOW},v1=ab,v1=${good}`, BODY, [SECRET], NOW)).to.equal(true);
  });

  it('parse one t and at least one v1, ignoring other schemes and spaces', () => {
    expect(parseSignatureHeader('t=1, v1=a ,v0=b,v1=c')).to.deep.equal({ timestamp: 1, digests: ['a', 'c'] });
    for (const bad of [undefined, '', 't=1', 'v1=a', 't=1,t=2,v1=a', 't=-1,v1=a', 't=1.5,v1=a', 't=,v1=a']) {
      expect(parseSignatureHeader(bad), String(bad)).to.equal(null);
    }
  });

  it('name a message by its signed id under Standard Webhooks only; elsewhere (t, body) does', () => {
    const secret = 'whsec_dGhpcyBpcyBhIHRlc3Qga2V5IG9mIDMyIGJ5dGVzIQ==';
    for (const scheme of SIGNATURE_SCHEMES) {
      const headers = signedHeaders(scheme, secret, BODY, NOW, 'msg_1');
      const verified = verifyDelivery(scheme, headers, BODY, [secret], NOW);
      expect(verified, scheme).to.deep.equal(
        scheme === 'standard' ? { signedT: NOW, idSigned: true } : { signedT: scheme === 'github' ? 0 : NOW },
      );
    }
    // Another webhook-id under the same signature is another message the sender never signed.
    const headers = { ...signedHeaders('standard', secret, BODY, NOW, 'msg_1'), 'webhook-id': 'msg_2' };
    expect(verifyDelivery('standard', headers, BODY, [secret], NOW)).to.equal(null);
  });
});

describe('webhook filters (unit)', () => {
  it('compile at save: a syntax error is reported, a valid expression is not', () => {
    expect(filterSyntaxError("body.action == 'opened'")).to.equal(null);
    expect(filterSyntaxError('body.[')).to.be.a('string');
  });

  it('refuse at save an expression whose static fan-out doubles past the bound (review H-2)', () => {
    const chain = (n: number) => `[@,@]${'[].[@,@]'.repeat(n - 1)}`;
    expect(fanOut(compile(chain(8)))).to.equal(256);
    expect(filterSyntaxError(chain(8))).to.equal(null);
    expect(filterSyntaxError(chain(9))).to.match(/up to 512 times its input/);
    expect(filterSyntaxError(chain(23))).to.match(/at most 256 is allowed/);
    // Ordinary filters stay far below it.
    expect(fanOut(compile("body.action == 'opened' && headers.\"x-github-event\" == 'issues'"))).to.equal(4);
    expect(fanOut(compile('body.items[?n > `1`].{a: a, b: b}'))).to.equal(2);
  });

  it('use JMESPath truthiness; an evaluation error is an outcome', async () => {
    const pool = createFilterPool();
    const body = Buffer.from(JSON.stringify({ list: [], name: 'x' }));
    const input = { headers: {}, body, contentType: 'application/json', trigger: { id: 'i', slug: 's' } };
    try {
      expect((await pool.evaluate('body.name', input)).result).to.equal('matched');
      expect((await pool.evaluate('body.list', input)).result).to.equal('not_matched');
      expect((await pool.evaluate('body.missing', input)).result).to.equal('not_matched');
      expect((await pool.evaluate('abs(body.name)', input)).result).to.equal('error');
      // The worker reads the body as parseBodyForFilter does: form fields, JSON, or else the text.
      const form = { ...input, body: Buffer.from('a=1&b=2&b=3'), contentType: 'application/x-www-form-urlencoded' };
      expect((await pool.evaluate("body.a == '1' && body.b == ['2', '3']", form)).result).to.equal('matched');
      const text = { ...input, body: Buffer.from('not json'), contentType: 'application/json' };
      expect((await pool.evaluate("body == 'not json'", text)).result).to.equal('matched');
      expect(parseBodyForFilter(Buffer.from('not json'), 'application/json')).to.equal('not json');
    } finally {
      await pool.close();
    }
  });

  it('see JSON, a form (repeated fields as arrays) or the raw text', () => {
    expect(parseBodyForFilter(Buffer.from('{"a":[1]}'), 'application/json')).to.deep.equal({ a: [1] });
    expect(
      parseBodyForFilter(Buffer.from('a=1&b=2&b=3'), 'application/x-www-form-urlencoded; charset=utf-8'),
    ).to.deep.equal({
      a: '1',
      b: ['2', '3'],
    });
    expect(parseBodyForFilter(Buffer.from('not json'), 'application/json')).to.equal('not json');
  });
});
