import { randomBytes } from 'node:crypto';
import { expect } from 'chai';
import { loadConfig } from '../../src/platform/config';
import { codecKey, createPayloadCodec, ENCRYPTED_ENCODING, EncryptionCodec } from '../../src/platform/temporal/codec';

const utf8 = (text: string) => new TextEncoder().encode(text);
const text = (bytes: Uint8Array | null | undefined) => Buffer.from(bytes ?? []).toString('utf8');
const plain = { metadata: { encoding: utf8('json/plain') }, data: utf8('{"name":"Ada Lovelace"}') };

const NEW_KEY = randomBytes(32).toString('hex');

describe('payload codec (unit)', () => {
  const codec = new EncryptionCodec(codecKey('k'.repeat(40)));

  it('encrypts the whole payload, metadata included, and decrypts it back', async () => {
    const [sealed] = await codec.encode([plain]);
    expect(text(sealed!.metadata!.encoding)).to.equal(ENCRYPTED_ENCODING);
    expect(Buffer.from(sealed!.data!).toString('latin1')).not.to.contain('Ada');
    expect(Buffer.from(sealed!.data!).toString('latin1')).not.to.contain('json/plain');
    const [opened] = await codec.decode([sealed!]);
    expect(text(opened!.metadata!.encoding)).to.equal('json/plain');
    expect(text(opened!.data)).to.equal('{"name":"Ada Lovelace"}');
  });

  it('passes payloads it did not encrypt through unchanged (histories written before the codec)', async () => {
    const [same] = await codec.decode([plain]);
    expect(same).to.equal(plain);
  });

  it('opens payloads of a retired key after a rotation, and refuses an unknown key or a tampered payload', async () => {
    const [old] = await new EncryptionCodec(codecKey('o'.repeat(40))).encode([plain]);
    const rotated = createPayloadCodec(
      loadConfig({ WEFT_ENCRYPTION_KEY: NEW_KEY, WEFT_ENCRYPTION_PREVIOUS_KEYS: `${'o'.repeat(40)}` }),
    );
    expect(text((await rotated.decode([old!]))[0]!.data)).to.equal('{"name":"Ada Lovelace"}');
    const [fresh] = await rotated.encode([plain]);
    expect(text(fresh!.metadata!['encryption-key-id'])).to.equal(codecKey(Buffer.from(NEW_KEY, 'hex')).id);

    let refused = 0;
    await codec.decode([old!]).catch(() => refused++);
    const tampered = { ...fresh!, data: Buffer.from(fresh!.data!) };
    tampered.data[tampered.data.length - 1]! ^= 1;
    await rotated.decode([tampered]).catch(() => refused++);
    // A payload relabelled with another configured key's id does not open either (the id is bound).
    const relabelled = {
      ...fresh!,
      metadata: { ...fresh!.metadata, 'encryption-key-id': utf8(codecKey('o'.repeat(40)).id) },
    };
    await rotated.decode([relabelled]).catch(() => refused++);
    expect(refused).to.equal(3);
  });

  it('takes its key from WEFT_ENCRYPTION_KEY, else (development only) from JWT_SECRET', () => {
    const configured = createPayloadCodec(loadConfig({ WEFT_ENCRYPTION_KEY: NEW_KEY }));
    const derived = createPayloadCodec(loadConfig({ JWT_SECRET: 'j'.repeat(40) }));
    const otherDerived = createPayloadCodec(loadConfig({ JWT_SECRET: 'k'.repeat(40) }));
    expect(configured.keyId).to.equal(codecKey(Buffer.from(NEW_KEY, 'hex')).id);
    expect(derived.keyId).to.equal(codecKey(loadConfig({ JWT_SECRET: 'j'.repeat(40) }).WEFT_ENCRYPTION_KEY).id);
    expect(derived.keyId).not.to.equal(otherDerived.keyId);
    expect(() => loadConfig({ NODE_ENV: 'production', JWT_SECRET: 'x'.repeat(40) })).to.throw(/WEFT_ENCRYPTION_KEY/);
  });
});
