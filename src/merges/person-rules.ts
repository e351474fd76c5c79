/**
 * The person resolver's rules (knowledge-graph-service-api.md §2.4), as pure functions. Matching itself runs in SQL
 * against the partial indexes of migration 1763780006000, whose functions implement the same rules:
 *
 * - Person types (`weft_is_person_type`): `person`, `contact`, `employee`, and any namespaced type
 *   ending in `.person` or `:person` (`crm.person`, `github:person`). People of different person
 *   types can match each other.
 * - Email (`weft_person_email_key`): `properties.email` when it is a JSON string, trimmed and
 *   lower-cased. Empty or non-string values never match.
 * - Normalised name (`weft_person_name_key`): accents folded with Postgres `unaccent`
 *   (José → jose, Straße → strasse, Ærø → aero), lower case, apostrophes dropped (O'Brien =
 *   OBrien), every other run of punctuation or whitespace becomes one space (Jean-Luc = jean luc,
 *   "J.R.R. Tolkien" = "j r r tolkien"), trimmed. A name with nothing left never matches.
 * - Only live (not soft-deleted) people of the same workspace are candidates.
 */

export const PERSON_TYPES = ['person', 'contact', 'employee'] as const;

/** TypeScript twin of `weft_is_person_type`; decides which node.created events start the resolver. */
export function isPersonType(type: string): boolean {
  return (PERSON_TYPES as readonly string[]).includes(type) || /[.:]person$/.test(type);
}

export type MatchReason = 'email_match' | 'normalized_name_match';

export const MATCH_REASONS: readonly MatchReason[] = ['email_match', 'normalized_name_match'];

/**
 * knowledge-graph-service-api.md §2.4: both → 1.00, email only → 0.95, normalised name only → 0.75; no match → null.
 */
export function scoreMatch(match: { email: boolean; name: boolean }): { reasons: MatchReason[]; score: number } | null {
  if (match.email && match.name) return { reasons: ['email_match', 'normalized_name_match'], score: 1.0 };
  if (match.email) return { reasons: ['email_match'], score: 0.95 };
  if (match.name) return { reasons: ['normalized_name_match'], score: 0.75 };
  return null;
}

/**
 * What a pair's match rests on: its reasons and score and the keys that matched (null for a key
 * that did not). An undone merge keeps it (`merge_candidates.unmerged_evidence`), and the resolver
 * proposes that pair again only once its evidence differs: same reasons over another email, say.
 */
export interface PairEvidence {
  reasons: MatchReason[];
  score: number;
  email_key: string | null;
  name_key: string | null;
}

/** The evidence of a pair from both nodes' keys (`weft_person_email_key`, `weft_person_name_key`). */
export function pairEvidence(
  a: { email_key: string | null; name_key: string | null },
  b: { email_key: string | null; name_key: string | null },
): PairEvidence {
  const email = a.email_key !== null && a.email_key === b.email_key ? a.email_key : null;
  const name = a.name_key !== null && a.name_key === b.name_key ? a.name_key : null;
  const scored = scoreMatch({ email: email !== null, name: name !== null });
  return { reasons: scored?.reasons ?? [], score: scored?.score ?? 0, email_key: email, name_key: name };
}

export const sameEvidence = (a: PairEvidence, b: PairEvidence): boolean =>
  a.score === b.score &&
  a.email_key === b.email_key &&
  a.name_key === b.name_key &&
  a.reasons.join(',') === b.reasons.join(',');

/**
 * Auto-merge only when the workspace enables it and the score reaches its threshold (knowledge-graph-service-api.md
 * §3).
 */
export function shouldAutoMerge(
  score: number,
  settings: { auto_merge_enabled: boolean; merge_confidence_threshold: number },
): boolean {
  return settings.auto_merge_enabled && score >= settings.merge_confidence_threshold;
}

type Properties = Record<string, unknown>;

const stringList = (value: unknown): string[] =>
  Array.isArray(value) ? value.filter((item): item is string => typeof item === 'string') : [];

/**
 * How a merge combines the two property maps:
 * - shallow merge in which the survivor wins: every key the survivor has keeps its value, keys only
 *   the duplicate has are copied over;
 * - `aliases` collects what would otherwise be lost of the duplicate's identity: the union of both
 *   nodes' `aliases` lists and the duplicate's name when it differs from the survivor's, in that
 *   order, without repeats. A survivor whose `aliases` is not a list keeps it untouched.
 */
export function combineProperties(
  survivor: { name: string; properties: Properties },
  duplicate: { name: string; properties: Properties },
): Properties {
  const combined: Properties = { ...duplicate.properties, ...survivor.properties };
  const survivorAliases = survivor.properties.aliases;
  if (survivorAliases !== undefined && !Array.isArray(survivorAliases)) return combined;
  const aliases: unknown[] = [
    ...((survivorAliases as unknown[] | undefined) ?? []),
    ...stringList(duplicate.properties.aliases),
  ];
  if (duplicate.name !== survivor.name) aliases.push(duplicate.name);
  const unique = [...new Set(aliases)].filter((alias) => alias !== survivor.name);
  if (unique.length > 0) combined.aliases = unique;
  return combined;
}
