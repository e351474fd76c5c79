import { createCipheriv, createDecipheriv, hkdfSync, randomBytes } from 'node:crypto';
import { ForbiddenError } from '../platform/errors';

/**
 * The raw prompt is never stored (knowledge-graph-service-api.md §2.5), yet a workflow's input lands in
 * Temporal's history. So the API seals it (AES-256-GCM, key derived from WEFT_ENCRYPTION_KEY) and only
 * activities open it.
 * A sealed prompt is bound to its workspace and correlation id (GCM additional data): whoever can
 * start a workflow cannot replay another workspace's sealed prompt into their own, because the
 * activities open it with the workspace and correlation id they act for.
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

// Unambiguous: a uuid never holds a newline. Lower-cased, so that the same ids in another case still match.
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
