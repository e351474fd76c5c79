import { createCipheriv, createDecipheriv, hkdfSync, randomBytes } from 'node:crypto';
import { ForbiddenError } from '../errors';

/**
 * Sealed text: AES-256-GCM with a key derived from a secret (WEFT_ENCRYPTION_KEY) and a purpose, bound
 * to a workspace and a correlation id (GCM additional data). Prompts use it because the raw prompt is
 * never stored (knowledge-graph-service-api.md §2.5), yet a workflow's input lands in Temporal's
 * history: the API seals it and only activities open it. Whoever can start a workflow cannot replay
 * another workspace's sealed text into their own, because it opens only under the binding it was
 * sealed for. Webhook trigger secrets use the same sealer with a purpose of their own.
 */
export interface SealedText {
  sealed: string;
}

/** What a sealed prompt is bound to; opening it under any other binding fails. */
export interface SealBinding {
  workspaceId: string;
  correlationId: string;
}

const keyFrom = (secret: string | Buffer, purpose: string) =>
  Buffer.from(hkdfSync('sha256', secret, 'weft', purpose, 32));

// Every purpose keeps the additional data prompts were first sealed with (`weft-prompt-v2`): changing
// it would make every stored sealed value unreadable. Unambiguous: a uuid never holds a newline.
// Lower-cased, so that the same ids in another case still match.
const additionalData = (binding: SealBinding) =>
  Buffer.from(`weft-prompt-v2\n${binding.workspaceId.toLowerCase()}\n${binding.correlationId.toLowerCase()}`);

/** Final, never retried: a prompt sealed for another workspace or correlation id opens under no retry. */
export class SealedTextError extends ForbiddenError {}

/**
 * `purpose` derives a key of its own per use (prompts; webhook trigger secrets at rest), so a value
 * sealed for one use never opens as another.
 */
export function createSealer(secret: string | Buffer, purpose = 'weft-prompt-seal-v1') {
  const key = keyFrom(secret, purpose);
  return {
    seal(text: string, binding: SealBinding): SealedText {
      const iv = randomBytes(12);
      const cipher = createCipheriv('aes-256-gcm', key, iv);
      cipher.setAAD(additionalData(binding));
      const body = Buffer.concat([cipher.update(text, 'utf8'), cipher.final()]);
      return { sealed: Buffer.concat([iv, cipher.getAuthTag(), body]).toString('base64') };
    },
    open(value: SealedText, binding: SealBinding): string {
      const raw = Buffer.from(value.sealed, 'base64');
      if (raw.length < 28) throw new SealedTextError('The sealed prompt is truncated');
      try {
        const decipher = createDecipheriv('aes-256-gcm', key, raw.subarray(0, 12));
        decipher.setAAD(additionalData(binding));
        decipher.setAuthTag(raw.subarray(12, 28));
        return Buffer.concat([decipher.update(raw.subarray(28)), decipher.final()]).toString('utf8');
      } catch {
        throw new SealedTextError('The sealed prompt does not belong to this workspace and correlation id');
      }
    },
  };
}

export type Sealer = ReturnType<typeof createSealer>;
