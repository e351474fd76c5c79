import { createCipheriv, createDecipheriv, hkdfSync, randomBytes } from 'node:crypto';

/**
 * The raw prompt is never stored (contract 2.5), yet a workflow's input lands in Temporal's history.
 * So the API seals it (AES-256-GCM, key derived from JWT_SECRET) and only activities open it:
 * the history and the Temporal UI hold ciphertext, everything else in them stays readable.
 */
export interface SealedText {
  sealed: string;
}

const keyFrom = (secret: string) => Buffer.from(hkdfSync('sha256', secret, 'weft', 'weft-prompt-seal-v1', 32));

export function createSealer(secret: string) {
  const key = keyFrom(secret);
  return {
    seal(text: string): SealedText {
      const iv = randomBytes(12);
      const cipher = createCipheriv('aes-256-gcm', key, iv);
      const body = Buffer.concat([cipher.update(text, 'utf8'), cipher.final()]);
      return { sealed: Buffer.concat([iv, cipher.getAuthTag(), body]).toString('base64') };
    },
    open(value: SealedText): string {
      const raw = Buffer.from(value.sealed, 'base64');
      const decipher = createDecipheriv('aes-256-gcm', key, raw.subarray(0, 12));
      decipher.setAuthTag(raw.subarray(12, 28));
      return Buffer.concat([decipher.update(raw.subarray(28)), decipher.final()]).toString('utf8');
    },
  };
}

export type Sealer = ReturnType<typeof createSealer>;
