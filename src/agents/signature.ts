import { createHash } from 'node:crypto';

// Applied in this order: a quoted path is a string, a path's line numbers belong to the path, and a
// hex id is masked before its digits could be.
const UUID = /\b[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}\b/gi;
const QUOTED = /"(?:[^"\\\n]|\\.)*"|'(?:[^'\\\n]|\\.)*'|`(?:[^`\\\n]|\\.)*`/g;
// Anything with a slash or backslash between name characters, optionally absolute or drive-rooted,
// with trailing :line:column.
const PATH = /(?:[A-Za-z]:)?(?:[~.]{0,2}[\\/])?(?:[\w@+.-]+[\\/])+[\w@+.-]*(?::\d+)*/g;
// 0x-prefixed, or a run of six or more hex digits holding both a digit and a letter (a commit, an
// object id); English words made of a–f letters only are left alone.
const HEX = /\b(?:0x[0-9a-f]+|(?=[0-9a-f]*\d)(?=[0-9a-f]*[a-f])[0-9a-f]{6,})\b/gi;
const DIGITS = /\d+/g;

/**
 * The failure-cluster key of an error signature: uuids, quoted strings, file paths, hex ids and
 * digits masked, whitespace folded. Two failures that differ only in those land in one cluster.
 */
export function normalizeSignature(signature: string): string {
  return signature
    .replace(UUID, '<uuid>')
    .replace(QUOTED, '<str>')
    .replace(PATH, '<path>')
    .replace(HEX, '<hex>')
    .replace(DIGITS, '<n>')
    .replace(/\s+/g, ' ')
    .trim();
}

/** The normalised signature and its SHA-256 (the cluster's key in the database). */
export function signatureHash(signature: string): { normalized: string; hash: string } {
  const normalized = normalizeSignature(signature);
  return { normalized, hash: createHash('sha256').update(normalized, 'utf8').digest('hex') };
}
