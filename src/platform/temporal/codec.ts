import { createCipheriv, createDecipheriv, createHash, hkdfSync, randomBytes } from 'node:crypto';
import type { DataConverter, Payload, PayloadCodec } from '@temporalio/common';
import { METADATA_ENCODING_KEY } from '@temporalio/common';
import { temporal } from '@temporalio/proto';
import type { Config } from '../config';

/** The encoding of a payload this codec encrypted; any other payload passes through unchanged. */
export const ENCRYPTED_ENCODING = 'binary/encrypted';
/** Which key encrypted the payload, so that a rotated key still opens older histories. */
export const KEY_ID_METADATA = 'encryption-key-id';

const IV_BYTES = 12;
const TAG_BYTES = 16;

export interface CodecKey {
  /** Not secret: the first 16 hex digits of the key's SHA-256. */
  id: string;
  key: Buffer;
}

/** A 256-bit key derived from a secret of any format (HKDF), so the variable may be a passphrase or random text. */
export function codecKey(secret: string | Buffer): CodecKey {
  const key = Buffer.from(hkdfSync('sha256', secret, 'weft', 'weft-temporal-payload-codec-v1', 32));
  return { id: createHash('sha256').update(key).digest('hex').slice(0, 16), key };
}

const utf8 = (text: string) => new TextEncoder().encode(text);
const text = (bytes: Uint8Array | null | undefined) => (bytes ? Buffer.from(bytes).toString('utf8') : undefined);

/**
 * Encrypts every payload (the whole Payload message, metadata included) with AES-256-GCM, so a
 * Temporal history holds ciphertext: the server, its database and the UI see neither prompt text nor
 * graph facts. Runs in the client and the worker, outside the workflow sandbox, so workflow code is
 * unchanged. Search attributes are not payloads and stay readable (operators filter on them).
 */
export class EncryptionCodec implements PayloadCodec {
  private readonly keys: Map<string, Buffer>;
  /** The id new payloads are labelled with. */
  readonly keyId: string;

  constructor(
    private readonly current: CodecKey,
    previous: readonly CodecKey[] = [],
  ) {
    this.keys = new Map([current, ...previous].map((entry) => [entry.id, entry.key]));
    this.keyId = current.id;
  }

  async encode(payloads: Payload[]): Promise<Payload[]> {
    return payloads.map((payload) => this.encrypt(payload));
  }

  async decode(payloads: Payload[]): Promise<Payload[]> {
    return payloads.map((payload) => this.decrypt(payload));
  }

  private encrypt(payload: Payload): Payload {
    const iv = randomBytes(IV_BYTES);
    const cipher = createCipheriv('aes-256-gcm', this.current.key, iv);
    // The key id is bound as additional data: a payload relabelled with another key id fails to open.
    cipher.setAAD(Buffer.from(this.current.id));
    const plain = temporal.api.common.v1.Payload.encode(payload).finish();
    const body = Buffer.concat([cipher.update(plain), cipher.final()]);
    return {
      metadata: { [METADATA_ENCODING_KEY]: utf8(ENCRYPTED_ENCODING), [KEY_ID_METADATA]: utf8(this.current.id) },
      data: Buffer.concat([iv, cipher.getAuthTag(), body]),
    };
  }

  private decrypt(payload: Payload): Payload {
    if (text(payload.metadata?.[METADATA_ENCODING_KEY]) !== ENCRYPTED_ENCODING) return payload;
    const keyId = text(payload.metadata?.[KEY_ID_METADATA]) ?? '';
    const key = this.keys.get(keyId);
    if (!key) throw new PayloadDecryptionError(`No key with id "${keyId}" is configured`);
    const raw = Buffer.from(payload.data ?? []);
    if (raw.length < IV_BYTES + TAG_BYTES) throw new PayloadDecryptionError('Encrypted payload is truncated');
    try {
      const decipher = createDecipheriv('aes-256-gcm', key, raw.subarray(0, IV_BYTES));
      decipher.setAAD(Buffer.from(keyId));
      decipher.setAuthTag(raw.subarray(IV_BYTES, IV_BYTES + TAG_BYTES));
      const plain = Buffer.concat([decipher.update(raw.subarray(IV_BYTES + TAG_BYTES)), decipher.final()]);
      const decoded = temporal.api.common.v1.Payload.decode(plain);
      return { metadata: decoded.metadata, data: decoded.data };
    } catch {
      throw new PayloadDecryptionError('Encrypted payload does not open with its key');
    }
  }
}

/** A payload that is not this codec's ciphertext under any configured key. */
export class PayloadDecryptionError extends Error {}

export type PayloadCodecConfig = Pick<Config, 'WEFT_ENCRYPTION_KEY' | 'WEFT_ENCRYPTION_PREVIOUS_KEYS'>;

/**
 * The codec from configuration: WEFT_ENCRYPTION_KEY (outside production: derived from JWT_SECRET)
 * plus retired keys.
 */
export function createPayloadCodec(config: PayloadCodecConfig): EncryptionCodec {
  const previous = (config.WEFT_ENCRYPTION_PREVIOUS_KEYS ?? '')
    .split(',')
    .map((secret) => secret.trim())
    .filter(Boolean)
    .map(codecKey);
  return new EncryptionCodec(codecKey(config.WEFT_ENCRYPTION_KEY), previous);
}

/** The data converter both the client and the worker install: the default converters, then encryption. */
export const dataConverter = (codec: PayloadCodec): DataConverter => ({ payloadCodecs: [codec] });
