import { createCipheriv, randomBytes } from 'node:crypto';
import { temporal } from '@temporalio/proto';
import { expect } from 'chai';
import { loadConfig } from '../../src/platform/config';
import {
  codecKey,
  createPayloadCodec,
  ENCRYPTED_ENCODING,
  EncryptionCodec,
  PayloadDecryptionError,
  SYSTEM_SCOPE,
  scopeKey,
  WORKSPACE_METADATA,
} from '../../src/platform/temporal/codec';
import { refusedPayloadReason } from '../../src/platform/temporal/refused-payload';

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

  it('refuses payloads it did not encrypt: the client throws, the worker decodes them to the refusal', async () => {
    let refused = 0;
    await codec.decode([plain]).catch(() => refused++);
    expect(refused).to.equal(1);
    const worker = new EncryptionCodec(codecKey('k'.repeat(40)), [], { refuse: 'placeholder' });
    const [placeholder] = await worker.decode([plain]);
    expect(refusedPayloadReason(JSON.parse(text(placeholder!.data)))).to.equal('Payload is not encrypted');
  });

  describe('a data key per workspace', () => {
    const A = '0b7f5a1e-1f4e-4c0e-9d59-5a3c2b1e0a01';
    const B = '0b7f5a1e-1f4e-4c0e-9d59-5a3c2b1e0a02';
    const json = (value: unknown) => ({
      metadata: { encoding: utf8('json/plain') },
      data: utf8(JSON.stringify(value)),
    });
    const workflow = (workflowId: string) => ({ type: 'workflow' as const, namespace: 'default', workflowId });

    it('seals with the key of the workspace the value names, labelled with it, else the system key', async () => {
      const [ofA, ofB, none] = await codec.encode([json({ workspaceId: A }), json({ workspaceId: B }), plain]);
      expect(text(ofA!.metadata![WORKSPACE_METADATA])).to.equal(A);
      expect(text(ofB!.metadata![WORKSPACE_METADATA])).to.equal(B);
      expect(text(none!.metadata![WORKSPACE_METADATA])).to.equal(SYSTEM_SCOPE);
      expect(scopeKey(codecKey('k'.repeat(40)).key, A).equals(scopeKey(codecKey('k'.repeat(40)).key, B))).to.equal(
        false,
      );
      expect(JSON.parse(text(codec.open(ofA!).data))).to.deep.equal({ workspaceId: A });
    });

    it('a payload relabelled with another workspace does not open (the workspace is authenticated data)', async () => {
      const [ofB] = await codec.encode([json({ workspaceId: B, secret: 'hunter2' })]);
      const relabelled = { ...ofB!, metadata: { ...ofB!.metadata, [WORKSPACE_METADATA]: utf8(A) } };
      expect(() => codec.open(relabelled)).to.throw(PayloadDecryptionError);
      let refused = 0;
      await codec.decode([relabelled]).catch(() => refused++);
      expect(refused).to.equal(1);
    });

    it("a workflow's results take its workspace's key; another's payload moved into it is refused", async () => {
      const worker = new EncryptionCodec(codecKey('k'.repeat(40)), [], { refuse: 'placeholder' });
      const [input] = await codec.encode([json({ workspaceId: A, batch: 1 })], workflow('wf-a'));
      await worker.decode([input!], workflow('wf-a'));
      const [result] = await worker.encode([json({ ok: true })], workflow('wf-a'));
      expect(text(result!.metadata![WORKSPACE_METADATA])).to.equal(A);
      const [fromB] = await codec.encode([json({ workspaceId: B })], workflow('wf-b'));
      const [moved] = await worker.decode([fromB!], workflow('wf-a'));
      expect(refusedPayloadReason(JSON.parse(text(moved!.data)))).to.match(/another workspace/);
      // An activity's payload is never handed over as a placeholder: its task fails instead.
      const activity = { type: 'activity' as const, namespace: 'default', workflowId: 'wf-a', isLocal: false };
      let refused = 0;
      await worker.decode([fromB!], activity).catch(() => refused++);
      expect(refused).to.equal(1);
    });

    it('refuses a value that names another workspace than the key that sealed it', async () => {
      const forged = codec.seal(json({ workspaceId: B }), A);
      let refused = 0;
      await codec.decode([forged]).catch(() => refused++);
      expect(refused).to.equal(1);
    });

    it('still opens payloads sealed before workspace keys (one root key, no workspace label)', async () => {
      const root = codecKey('k'.repeat(40));
      const iv = randomBytes(12);
      const cipher = createCipheriv('aes-256-gcm', root.key, iv);
      cipher.setAAD(Buffer.from(root.id));
      const body = Buffer.concat([
        cipher.update(temporal.api.common.v1.Payload.encode(plain).finish()),
        cipher.final(),
      ]);
      const legacy = {
        metadata: { encoding: utf8(ENCRYPTED_ENCODING), 'encryption-key-id': utf8(root.id) },
        data: Buffer.concat([iv, cipher.getAuthTag(), body]),
      };
      expect(codec.scopeOf(legacy)).to.equal(SYSTEM_SCOPE);
      expect(text((await codec.decode([legacy]))[0]!.data)).to.equal('{"name":"Ada Lovelace"}');
    });
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
