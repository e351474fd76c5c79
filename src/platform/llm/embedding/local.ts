import type { EmbeddingProvider } from './contract';
import { EMBEDDING_DIMENSIONS as DIMENSIONS } from './contract';

const WORD_WEIGHT = 1;
const TRIGRAM_WEIGHT = 0.5;

// FNV-1a, 32 bits: fast, stable across processes and platforms.
function fnv1a(text: string): number {
  let hash = 0x811c9dc5;
  for (let i = 0; i < text.length; i++) {
    hash ^= text.charCodeAt(i);
    hash = Math.imul(hash, 0x01000193);
  }
  return hash >>> 0;
}

/** Lower-cased words without diacritics: "Zoë O'Brien" → ["zoe", "o", "brien"]. */
export function tokenize(text: string): string[] {
  return text
    .normalize('NFKD')
    .replace(/\p{M}+/gu, '')
    .toLowerCase()
    .split(/[^\p{L}\p{N}]+/u)
    .filter(Boolean);
}

// The hashing trick with a sign bit, so collisions cancel out on average instead of piling up.
function add(vector: Float64Array, feature: string, weight: number): void {
  const hash = fnv1a(feature);
  const index = hash % DIMENSIONS;
  vector[index]! += hash & 0x80000000 ? -weight : weight;
}

/**
 * A deterministic embedding: hashed words plus hashed character trigrams of each word, L2-normalised.
 * Texts sharing words are close ("alice" vs "Alice Smith" ≈ 0.71) and spelling variants stay near.
 */
export function localEmbedding(text: string): number[] {
  const vector = new Float64Array(DIMENSIONS);
  const words = tokenize(text);
  for (const word of words) {
    add(vector, `w:${word}`, WORD_WEIGHT);
    const padded = `#${word}#`;
    for (let i = 0; i + 3 <= padded.length; i++) add(vector, `c:${padded.slice(i, i + 3)}`, TRIGRAM_WEIGHT);
  }
  // Text without a word (punctuation only, empty) still needs a unit vector; cosine of a zero vector is NaN.
  if (words.length === 0) add(vector, `t:${text.trim().toLowerCase()}`, WORD_WEIGHT);
  let norm = 0;
  for (const value of vector) norm += value * value;
  norm = Math.sqrt(norm) || 1;
  return Array.from(vector, (value) => value / norm);
}

export function createLocalEmbeddingProvider(): EmbeddingProvider {
  return {
    name: 'local',
    async embed(texts) {
      return texts.map(localEmbedding);
    },
  };
}
