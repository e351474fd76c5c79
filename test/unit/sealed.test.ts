import { expect } from 'chai';
import { createSealer, SealedTextError } from '../../src/platform/crypto/sealer';

const PROMPT = 'Ada Lovelace wrote the first program.';
const WORKSPACE = '6f1c1a52-63c4-4d4c-9a53-0d2b0f0f7a11';
const OTHER_WORKSPACE = 'b3a9e0d4-2f5e-4c1a-8a7e-5a4f3c2b1a09';
const CORRELATION = '0b9d6f3e-8c2a-4e5b-9f1d-3a7c6e2b4d18';

describe('sealed prompts (unit)', () => {
  const sealer = createSealer('a'.repeat(40));
  const binding = { workspaceId: WORKSPACE, correlationId: CORRELATION };

  it('hide the text and open for the workspace and correlation id they were sealed for', () => {
    const sealed = sealer.seal(PROMPT, binding);
    expect(sealed.sealed).not.to.contain('Ada');
    expect(Buffer.from(sealed.sealed, 'base64').toString('latin1')).not.to.contain('Ada');
    expect(sealer.open(sealed, binding)).to.equal(PROMPT);
    // The same ids in upper case are the same workspace and execution.
    expect(sealer.open(sealed, { workspaceId: WORKSPACE.toUpperCase(), correlationId: CORRELATION })).to.equal(PROMPT);
  });

  it('do not open in another workspace: a sealed prompt cannot be replayed into a workflow of another tenant', () => {
    const sealed = sealer.seal(PROMPT, binding);
    expect(() => sealer.open(sealed, { workspaceId: OTHER_WORKSPACE, correlationId: CORRELATION })).to.throw(
      SealedTextError,
    );
  });

  it('do not open under another correlation id', () => {
    const sealed = sealer.seal(PROMPT, binding);
    const other = { workspaceId: WORKSPACE, correlationId: '5c2e7a1b-9d3f-4b6a-8e0c-1f4d7a9b2c63' };
    expect(() => sealer.open(sealed, other)).to.throw(SealedTextError);
  });

  it('do not open with another secret, nor when tampered with or truncated', () => {
    const sealed = sealer.seal(PROMPT, binding);
    expect(() => createSealer('b'.repeat(40)).open(sealed, binding)).to.throw(SealedTextError);
    const raw = Buffer.from(sealed.sealed, 'base64');
    raw[raw.length - 1]! ^= 1;
    expect(() => sealer.open({ sealed: raw.toString('base64') }, binding)).to.throw(SealedTextError);
    expect(() => sealer.open({ sealed: 'AAAA' }, binding)).to.throw(SealedTextError);
  });

  it('is final for the saga: the error is a forbidden domain error, never retried', () => {
    const sealed = sealer.seal(PROMPT, binding);
    try {
      sealer.open(sealed, { ...binding, workspaceId: OTHER_WORKSPACE });
      expect.fail('opened under another workspace');
    } catch (error) {
      expect((error as SealedTextError).code).to.equal('forbidden');
    }
  });
});
