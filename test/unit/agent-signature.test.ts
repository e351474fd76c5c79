import { expect } from 'chai';
import { normalizeSignature, signatureHash } from '../../src/agents/signature';

describe('failure signatures: normalisation (the failure-cluster key)', () => {
  it('masks digits', () => {
    expect(normalizeSignature('timeout after 3000 ms on attempt 2')).to.equal('timeout after <n> ms on attempt <n>');
  });

  it('masks uuids whole, not as digits and hex', () => {
    expect(normalizeSignature('session 0b9f6c1e-2a3d-4e5f-8a9b-0c1d2e3f4a5b not found')).to.equal(
      'session <uuid> not found',
    );
  });

  it('masks hex ids (0x-prefixed, commits) but not words made of a–f letters', () => {
    expect(normalizeSignature('segfault at 0x7ffd5e8c in commit 3f2a9c1e')).to.equal(
      'segfault at <hex> in commit <hex>',
    );
    expect(normalizeSignature('facade decade failed')).to.equal('facade decade failed');
  });

  it('masks quoted strings of every quote style', () => {
    expect(normalizeSignature(`Cannot read properties of undefined (reading 'foo')`)).to.equal(
      'Cannot read properties of undefined (reading <str>)',
    );
    expect(normalizeSignature('KeyError: "user_42" in `lookup()`')).to.equal('KeyError: <str> in <str>');
  });

  it('masks file paths, with their line and column', () => {
    expect(normalizeSignature('at /app/src/graph/node.ts:120:15')).to.equal('at <path>');
    expect(normalizeSignature('in ./lib/x.js and C:\\Users\\ada\\run.py:3')).to.equal('in <path> and <path>');
    expect(normalizeSignature('failed to load src/foo/bar.ts')).to.equal('failed to load <path>');
  });

  it('folds whitespace and trims', () => {
    expect(normalizeSignature('  Error:\n\tboom   now  ')).to.equal('Error: boom now');
  });

  it('gives two failures that differ only in the masked parts one key', () => {
    const a = signatureHash(
      `TypeError: x is undefined at /srv/a/b.ts:10:2 (request 8f0e0a3c-1111-4222-8333-944445555666, 'alpha')`,
    );
    const b = signatureHash(
      `TypeError:  x is undefined at /home/ci/c/d.ts:99:7 (request 0a0b0c0d-1111-4222-8333-944445555666, "beta")`,
    );
    expect(a.hash).to.equal(b.hash);
    expect(a.hash).to.match(/^[0-9a-f]{64}$/);
    expect(signatureHash('TypeError: y is undefined').hash).not.to.equal(a.hash);
  });
});
