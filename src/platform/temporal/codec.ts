import { createCipheriv, createDecipheriv, createHash, hkdfSync, randomBytes } from 'node:crypto';
import type { DataConverter, Payload, PayloadCodec, SerializationContext } from '@temporalio/common';
import { METADATA_ENCODING_KEY } from '@temporalio/common';
import { temporal } from '@temporalio/proto';
import type { Config } from '../config';
import { REFUSED_PAYLOAD_FIELD } from './refused-payload';

/** The encoding of a payload this codec encrypted. */
export const ENCRYPTED_ENCODING = 'binary/encrypted';
/** Which root key (WEFT_ENCRYPTION_KEY or a retired one) the payload's data key derives from. */
export const KEY_ID_METADATA = 'encryption-key-id';
/** Whose data key sealed the payload: a workspace id, or `system` for payloads that name no workspace. */
export const WORKSPACE_METADATA = 'weft-workspace';
/** The scope of payloads that name no workspace (maintenance jobs, operator signals): only operators open them. */
export const SYSTEM_SCOPE = 'system';

const IV_BYTES = 12;
const TAG_BYTES = 16;
const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/;
/** Bounds the per-process caches (derived keys, workflow → workspace); both refill on demand. */
const CACHE_ENTRIES = 10_000;
const WORKSPACE_ID_BYTES = Buffer.from('"workspaceId"');

export interface CodecKey {
  /** Not secret: the first 16 hex digits of the key's SHA-256. */
  id: string;
  key: Buffer;
}

/** A 256-bit root key derived from a secret of any format (HKDF): the variable may be a passphrase or random text. */
export function codecKey(secret: string | Buffer): CodecKey {
  const key = Buffer.from(hkdfSync('sha256', secret, 'weft', 'weft-temporal-payload-codec-v1', 32));
  return { id: createHash('sha256').update(key).digest('hex').slice(0, 16), key };
}

/** The data key of one scope (a workspace id or `system`) under a root key: HKDF with the scope as info. */
export function scopeKey(root: Buffer, scope: string): Buffer {
  return Buffer.from(hkdfSync('sha256', root, 'weft-temporal-payload-v2', `weft-payload-scope:${scope}`, 32));
}

const encoder = new TextEncoder();
const utf8 = (text: string) => encoder.encode(text);
const text = (bytes: Uint8Array | null | undefined) => (bytes ? Buffer.from(bytes).toString('utf8') : undefined);

/** The additional data of a sealed payload: a payload relabelled with another key or workspace fails to open. */
const aad = (keyId: string, scope: string) => Buffer.from(`${keyId}|${scope}`);

/**
 * The workspace a plaintext payload's value names: the `workspaceId` at the top of the JSON the default
 * payload converter wrote (every workspace workflow's input and most activity inputs carry one).
 */
export function workspaceOfPayload(payload: Payload): string | undefined {
  if (text(payload.metadata?.[METADATA_ENCODING_KEY]) !== 'json/plain' || !payload.data) return undefined;
  const data = Buffer.from(payload.data);
  // A cheap scan first: most payloads (results) name no workspace and are never parsed.
  if (data[0] !== 0x7b || !data.includes(WORKSPACE_ID_BYTES)) return undefined;
  try {
    const value: unknown = JSON.parse(data.toString('utf8'));
    const id = (value as { workspaceId?: unknown }).workspaceId;
    return typeof id === 'string' && UUID.test(id) ? id : undefined;
  } catch {
    return undefined;
  }
}

/** A small insertion-ordered map that forgets its oldest entry when full. */
class BoundedMap<V> extends Map<string, V> {
  override set(key: string, value: V): this {
    if (!this.has(key) && this.size >= CACHE_ENTRIES) this.delete(this.keys().next().value as string);
    return super.set(key, value);
  }
}

/** A payload the codec refuses to hand over, and why (never shown to a tenant). */
export class PayloadDecryptionError extends Error {}

export interface CodecOptions {
  /**
   * How a payload that is not this codec's ciphertext, or that belongs to another workspace than its
   * workflow, is refused: `throw` (the client, the default), or in the worker `placeholder` for
   * workflow payloads (the interceptor fails the workflow at once) and a throw for activity payloads.
   */
  refuse?: 'placeholder' | 'throw';
}

/**
 * Encrypts every payload (the whole Payload message, metadata included) with AES-256-GCM under a data
 * key of its workspace, derived from the root key with HKDF, so a Temporal history holds ciphertext and
 * one workspace's key opens nothing of another's. Metadata names the root key and the workspace; both
 * are bound as additional data. Runs in the client and the worker, outside the workflow sandbox.
 *
 * The codec sees payloads and Temporal's serialization context (the workflow id), not the workflow's
 * search attributes, so it takes the workspace from the value: the top-level `workspaceId` of the JSON.
 * It remembers, per workflow id, the workspace of the workflow's own payloads (its input), so that results,
 * signals and activity payloads of that workflow that name no workspace are sealed with its key too, and a
 * payload of another workspace moved into it is refused. Payloads of workflows that name no workspace
 * (maintenance jobs) use the `system` key, which only an operator's codec credential opens.
 */
export class EncryptionCodec implements PayloadCodec {
  private readonly roots: Map<string, Buffer>;
  private readonly dataKeys = new BoundedMap<Buffer>();
  private readonly workflowWorkspaces = new BoundedMap<string>();
  /** The root key id new payloads are labelled with. */
  readonly keyId: string;
  private readonly refuse: 'placeholder' | 'throw';

  constructor(
    private readonly current: CodecKey,
    previous: readonly CodecKey[] = [],
    options: CodecOptions = {},
  ) {
    this.roots = new Map([current, ...previous].map((entry) => [entry.id, entry.key]));
    this.keyId = current.id;
    this.refuse = options.refuse ?? 'throw';
  }

  async encode(payloads: Payload[], context?: SerializationContext): Promise<Payload[]> {
    return payloads.map((payload) => this.seal(payload, this.scopeFor(payload, context)));
  }

  async decode(payloads: Payload[], context?: SerializationContext): Promise<Payload[]> {
    return payloads.map((payload) => {
      try {
        return this.decodeOne(payload, context);
      } catch (error) {
        if (this.refuse === 'throw' || !(error instanceof PayloadDecryptionError)) throw error;
        // Activity payloads are never workflow code's to see: the task fails instead (an activity's
        // input is refused before it runs; a refused result leaves the workflow task failing, nothing written).
        if (context?.type === 'activity') throw error;
        return refusal(error.message);
      }
    });
  }

  /** The scope of a sealed payload (its workspace or `system`); undefined for anything else. */
  scopeOf(payload: Payload): string | undefined {
    if (text(payload.metadata?.[METADATA_ENCODING_KEY]) !== ENCRYPTED_ENCODING) return undefined;
    // Payloads sealed before workspace keys (one process-wide key) are the system's.
    return text(payload.metadata?.[WORKSPACE_METADATA]) ?? SYSTEM_SCOPE;
  }

  /** Opens a sealed payload of any scope; throws PayloadDecryptionError when it is not one or does not open. */
  open(payload: Payload): Payload {
    if (text(payload.metadata?.[METADATA_ENCODING_KEY]) !== ENCRYPTED_ENCODING) {
      throw new PayloadDecryptionError('Payload is not encrypted');
    }
    const keyId = text(payload.metadata?.[KEY_ID_METADATA]) ?? '';
    const root = this.roots.get(keyId);
    if (!root) throw new PayloadDecryptionError(`No key with id "${keyId}" is configured`);
    const scope = text(payload.metadata?.[WORKSPACE_METADATA]);
    const raw = Buffer.from(payload.data ?? []);
    if (raw.length < IV_BYTES + TAG_BYTES) throw new PayloadDecryptionError('Encrypted payload is truncated');
    try {
      // No workspace label: sealed before workspace keys, with the root key itself and its id as AAD.
      const decipher = createDecipheriv(
        'aes-256-gcm',
        scope ? this.dataKey(keyId, root, scope) : root,
        raw.subarray(0, IV_BYTES),
      );
      decipher.setAAD(scope ? aad(keyId, scope) : Buffer.from(keyId));
      decipher.setAuthTag(raw.subarray(IV_BYTES, IV_BYTES + TAG_BYTES));
      const plain = Buffer.concat([decipher.update(raw.subarray(IV_BYTES + TAG_BYTES)), decipher.final()]);
      const decoded = temporal.api.common.v1.Payload.decode(plain);
      return { metadata: decoded.metadata, data: decoded.data };
    } catch {
      throw new PayloadDecryptionError('Encrypted payload does not open with its key');
    }
  }

  /** Seals a payload with the data key of `scope` (a workspace id or `system`) under the current root key. */
  seal(payload: Payload, scope: string): Payload {
    const iv = randomBytes(IV_BYTES);
    const cipher = createCipheriv('aes-256-gcm', this.dataKey(this.current.id, this.current.key, scope), iv);
    cipher.setAAD(aad(this.current.id, scope));
    const plain = temporal.api.common.v1.Payload.encode(payload).finish();
    const body = Buffer.concat([cipher.update(plain), cipher.final()]);
    return {
      metadata: {
        [METADATA_ENCODING_KEY]: utf8(ENCRYPTED_ENCODING),
        [KEY_ID_METADATA]: utf8(this.current.id),
        [WORKSPACE_METADATA]: utf8(scope),
      },
      data: Buffer.concat([iv, cipher.getAuthTag(), body]),
    };
  }

  /** The workspace a plaintext payload belongs to: the one it names, else its workflow's, else the system. */
  scopeFor(payload: Payload, context?: SerializationContext): string {
    const named = workspaceOfPayload(payload);
    const known = context?.workflowId ? this.workflowWorkspaces.get(context.workflowId) : undefined;
    if (named && context?.type === 'workflow' && context.workflowId && !known) {
      this.workflowWorkspaces.set(context.workflowId, named);
    }
    return named ?? known ?? SYSTEM_SCOPE;
  }

  private decodeOne(payload: Payload, context?: SerializationContext): Payload {
    const plain = this.open(payload);
    const scope = this.scopeOf(payload) ?? SYSTEM_SCOPE;
    const labelled = text(payload.metadata?.[WORKSPACE_METADATA]) !== undefined;
    // The value may not name another workspace than the key that sealed it (a tenant's own key
    // sealing a value that points at someone else's workspace).
    const named = workspaceOfPayload(plain);
    if (labelled && named && named !== scope) throw new PayloadDecryptionError('Payload names another workspace');
    if (labelled && scope !== SYSTEM_SCOPE && context?.workflowId) {
      const known = this.workflowWorkspaces.get(context.workflowId);
      if (known && known !== scope) throw new PayloadDecryptionError('Payload belongs to another workspace');
      if (!known && context.type === 'workflow') this.workflowWorkspaces.set(context.workflowId, scope);
    }
    return plain;
  }

  private dataKey(keyId: string, root: Buffer, scope: string): Buffer {
    const cacheKey = `${keyId}|${scope}`;
    let key = this.dataKeys.get(cacheKey);
    if (!key) {
      key = scopeKey(root, scope);
      this.dataKeys.set(cacheKey, key);
    }
    return key;
  }
}

/** The placeholder the worker decodes a refused payload to (see REFUSED_PAYLOAD_FIELD). */
function refusal(reason: string): Payload {
  return {
    metadata: { [METADATA_ENCODING_KEY]: utf8('json/plain') },
    data: utf8(JSON.stringify({ [REFUSED_PAYLOAD_FIELD]: reason })),
  };
}

export type PayloadCodecConfig = Pick<Config, 'WEFT_ENCRYPTION_KEY' | 'WEFT_ENCRYPTION_PREVIOUS_KEYS'>;

/**
 * The codec from configuration: WEFT_ENCRYPTION_KEY (outside production: derived from JWT_SECRET)
 * plus retired keys.
 */
export function createPayloadCodec(config: PayloadCodecConfig, options: CodecOptions = {}): EncryptionCodec {
  const previous = (config.WEFT_ENCRYPTION_PREVIOUS_KEYS ?? '')
    .split(',')
    .map((secret) => secret.trim())
    .filter(Boolean)
    .map(codecKey);
  return new EncryptionCodec(codecKey(config.WEFT_ENCRYPTION_KEY), previous, options);
}

/** The data converter both the client and the worker install: the default converters, then encryption. */
export const dataConverter = (codec: PayloadCodec): DataConverter => ({ payloadCodecs: [codec] });
