import { toSql } from 'pgvector/pg';
import type { EntityManager } from 'typeorm';
import type { NodeRow } from '../graph/repository';
import { NODE_COLUMNS } from '../graph/repository';
import { queryRows } from '../platform/db/query';

export interface VectorCandidate extends NodeRow {
  similarity: number;
}

export interface StructuralCandidate extends NodeRow {
  recency: number;
  structural: number;
}

/** The HNSW candidate list: a few times k keeps recall@k ≥ 0.95 (see bench/RESULTS-search.md). */
export const efSearchFor = (topK: number) => Math.max(100, topK * 4);
const FILTERED_OVERFETCH = 10;
/** pgvector's upper bound for hnsw.ef_search. */
const MAX_EF_SEARCH = 1000;

// With a type filter the index walk meets matching rows late and relaxed_order hands back the
// first k it meets; reading more and keeping the k closest restores recall.
const vectorDepth = (topK: number, types: readonly string[]) =>
  types.length > 0 ? Math.max(topK * FILTERED_OVERFETCH, efSearchFor(topK)) : topK;

/**
 * The settings `vectorCandidates` needs in its transaction. HNSW with a filter (the workspace, a
 * type list) can return fewer than k rows, because the index's candidate list is filled before the
 * filter runs; iterative scans keep walking the graph until k rows pass. relaxed_order may return
 * them slightly out of order, so callers re-sort. With a type filter the candidate list is wider
 * too: each step of the walk then looks further for rows of the type. A unit of work takes them
 * in its scope (`settings`, no round trip of their own); `enableIterativeIndexScan` sets them.
 */
export function vectorScanSettings(topK: number, types: readonly string[] = []): Record<string, string> {
  const efSearch = types.length > 0 ? Math.min(MAX_EF_SEARCH, vectorDepth(topK, types) * 4) : efSearchFor(topK);
  return { 'hnsw.iterative_scan': 'relaxed_order', 'hnsw.ef_search': String(efSearch) };
}

/** Sets `vectorScanSettings` in the caller's transaction (transaction-local). */
export async function enableIterativeIndexScan(
  m: EntityManager,
  topK: number,
  types: readonly string[] = [],
): Promise<void> {
  const settings = vectorScanSettings(topK, types);
  await queryRows(m, `SELECT set_config('hnsw.iterative_scan', $1, true), set_config('hnsw.ef_search', $2, true)`, [
    settings['hnsw.iterative_scan'],
    settings['hnsw.ef_search'],
  ]);
}

const typeFilter = (types: readonly string[], slot: string) =>
  types.length > 0 ? `AND n.type = ANY(${slot}::text[])` : '';

/** Where a statement's parameters sit ($1, $2, …): the two reads share one statement in hybrid search. */
interface VectorSlots {
  embedding: string;
  ws: string;
  limit: string;
  types: string;
}

const vectorCte = (types: readonly string[], order: string, at: VectorSlots) => `
  c AS MATERIALIZED (
    SELECT ${NODE_COLUMNS}, n.embedding <=> ${at.embedding}::vector AS distance
    FROM nodes n
    WHERE n.workspace_id = ${at.ws} AND NOT n.is_deleted AND n.embedding IS NOT NULL ${typeFilter(types, at.types)}
    ORDER BY ${order}
    LIMIT ${at.limit}
  )`;

const VECTOR_ALONE: VectorSlots = { embedding: '$1', ws: '$2', limit: '$3', types: '$4' };
const vectorSql = (types: readonly string[], order: string) =>
  `WITH ${vectorCte(types, order, VECTOR_ALONE)} SELECT * FROM c ORDER BY c.distance, c.id`;
const INDEX_ORDER = (at: VectorSlots) => `n.embedding <=> ${at.embedding}::vector`;

type VectorInput = { workspaceId: string; embedding: number[]; topK: number; types: readonly string[] };

/** The index walk's rows, best first, cut to k; the exact query when the walk found fewer than k. */
async function finishVector(
  m: EntityManager,
  input: VectorInput & { minSimilarity: number },
  walked: (NodeRow & { distance: number })[],
): Promise<VectorCandidate[]> {
  let rows = walked.slice(0, input.topK);
  if (rows.length < input.topK) {
    // "+ 0" turns the ordering into a plain expression, which no vector index can serve.
    rows = await queryRows(m, vectorSql(input.types, '(n.embedding <=> $1::vector) + 0'), [
      toSql(input.embedding),
      input.workspaceId,
      input.topK,
      ...(input.types.length ? [input.types] : []),
    ]);
  }
  return rows
    .filter((row) => 1 - row.distance >= input.minSimilarity)
    .map(({ distance, ...row }) => ({ ...row, similarity: 1 - distance }));
}

/**
 * Rule 1: the k nearest live nodes by cosine distance, through the HNSW index, then only those at
 * or above the similarity threshold. Runs under the workspace's RLS scope; the explicit workspace
 * predicate is there for the planner. When the index walk ends with fewer than k rows (a filter
 * so selective that the scan gave up), the same query runs exactly, so k rows come back whenever
 * k exist; that only happens when few rows match, which is when an exact scan is cheap. Its
 * transaction must have `vectorScanSettings(topK, types)`.
 */
export async function vectorCandidates(
  m: EntityManager,
  input: VectorInput & { minSimilarity: number },
): Promise<VectorCandidate[]> {
  const walked = await queryRows<NodeRow & { distance: number }>(m, vectorSql(input.types, INDEX_ORDER(VECTOR_ALONE)), [
    toSql(input.embedding),
    input.workspaceId,
    vectorDepth(input.topK, input.types),
    ...(input.types.length ? [input.types] : []),
  ]);
  return finishVector(m, input, walked);
}

// Recency with a 7-day half-life (rule 5), computed by the database at the transaction's now().
const recencySql = (column: string) =>
  `power(0.5::float8, GREATEST(extract(epoch FROM now() - ${column})::float8, 0) / 604800.0)`;

interface StructuralSlots {
  ws: string;
  depth: string;
  topK: string;
  types: string;
}

/**
 * One pass of the structural top-k as CTEs (r, i, top, b): the union of the `depth` most recent and
 * the `depth` most important nodes (index-only scans of the covering indexes), scored exactly; only
 * the k winners are read from the heap. b holds the bound that proves the answer complete: a node
 * outside both lists scores at most 0.5 × (recency of the depth-th most recent) + 0.5 × (importance
 * of the depth-th most important).
 */
const structuralCtes = (types: readonly string[], at: StructuralSlots) => {
  const list = (order: string) => {
    if (types.length === 0) {
      return `SELECT n.id, n.last_touch_at, n.importance_score FROM nodes n
              WHERE n.workspace_id = ${at.ws} AND NOT n.is_deleted ORDER BY ${order} LIMIT ${at.depth}`;
    }
    // Per type, so each list is read in index order; a type list cannot be merged by one index scan.
    return `SELECT x.id, x.last_touch_at, x.importance_score FROM unnest(${at.types}::text[]) AS t(type)
            CROSS JOIN LATERAL (
              SELECT n.id, n.last_touch_at, n.importance_score FROM nodes n
              WHERE n.workspace_id = ${at.ws} AND n.type = t.type AND NOT n.is_deleted
              ORDER BY ${order} LIMIT ${at.depth}
            ) x ORDER BY ${order.replaceAll('n.', 'x.')} LIMIT ${at.depth}`;
  };
  return `r AS MATERIALIZED (${list('n.last_touch_at DESC')}),
          i AS MATERIALIZED (${list('n.importance_score DESC')}),
          top AS MATERIALIZED (
            SELECT u.id, ${recencySql('u.last_touch_at')} AS recency,
                   0.5 * ${recencySql('u.last_touch_at')} + 0.5 * u.importance_score AS structural
            FROM (SELECT * FROM r UNION SELECT * FROM i) u
            ORDER BY structural DESC, u.id
            LIMIT ${at.topK}
          ),
          b AS (
            SELECT 0.5 * ${recencySql('(SELECT min(last_touch_at) FROM r)')}
                   + 0.5 * (SELECT min(importance_score) FROM i) AS bound,
                   (SELECT count(*) FROM r) AS listed
          )`;
};

const STRUCTURAL_ALONE: StructuralSlots = { ws: '$1', depth: '$2', topK: '$3', types: '$4' };

type PassRow = StructuralCandidate & { bound: number | null; listed: string | null };

interface Pass {
  rows: StructuralCandidate[];
  bound: number;
  exhausted: boolean;
  depth: number;
}

function passOf(rows: PassRow[], depth: number): Pass {
  const first = rows[0];
  const exhausted = !first || Number(first.listed) < depth;
  const bound = first?.bound ?? 0;
  return { rows: rows.map(({ bound: _b, listed: _l, ...row }) => row), bound, exhausted, depth };
}

async function structuralPass(
  m: EntityManager,
  input: { workspaceId: string; topK: number; types: readonly string[] },
  depth: number,
): Promise<Pass> {
  const rows = await queryRows<PassRow>(
    m,
    `WITH ${structuralCtes(input.types, STRUCTURAL_ALONE)}
     SELECT ${NODE_COLUMNS}, top.recency, top.structural, b.bound, b.listed::text AS listed
     FROM top JOIN nodes n ON n.id = top.id CROSS JOIN b
     ORDER BY top.structural DESC, n.id`,
    [input.workspaceId, depth, input.topK, ...(input.types.length ? [input.types] : [])],
  );
  return passOf(rows, depth);
}

/**
 * How deep the last complete answer of a workspace's structural top-k had to read, per k and type
 * list, for a few minutes: the next search starts there instead of proving a shallower pass short
 * first. Only where a pass starts; every answer is still proven by its bound.
 */
const learnedDepths = new Map<string, { depth: number; at: number }>();
const LEARNED_FOR_MS = 5 * 60_000;
const LEARNED_MAX = 10_000;
const depthKey = (input: { workspaceId: string; topK: number; types: readonly string[] }) =>
  `${input.workspaceId}:${input.topK}:${JSON.stringify(input.types)}`;

function firstDepth(input: { workspaceId: string; topK: number; types: readonly string[] }): number {
  const start = Math.max(input.topK * 25, 500);
  const learned = learnedDepths.get(depthKey(input));
  return learned && Date.now() - learned.at < LEARNED_FOR_MS ? Math.max(start, learned.depth) : start;
}

/**
 * Rule 2's passes after the first: the k-th score must beat the bound, or the lists widen. The
 * depth a workspace needs grows about as √(k · nodes) (100k nodes, k = 10: 500 to 1,000 as the data
 * ages), so each next pass is twice as deep: ×8 read 4,500 rows where 1,500 do.
 */
async function completeStructural(
  m: EntityManager,
  input: { workspaceId: string; topK: number; types: readonly string[] },
  first: Pass,
): Promise<StructuralCandidate[]> {
  let pass = first;
  for (;;) {
    const kth = pass.rows[input.topK - 1];
    if (pass.exhausted || (kth && kth.structural >= pass.bound)) break;
    pass = await structuralPass(m, input, pass.depth * 2);
  }
  if (pass.depth !== first.depth || learnedDepths.has(depthKey(input))) {
    if (learnedDepths.size >= LEARNED_MAX) learnedDepths.clear();
    learnedDepths.set(depthKey(input), { depth: pass.depth, at: Date.now() });
  }
  return pass.rows;
}

/**
 * Rule 2: the top-k live nodes by 0.5 × recency + 0.5 × importance_score, exactly, without scoring
 * the whole workspace: widen the two index-ordered lists until the k-th score beats the bound.
 * The lists are index-only, so starting a few hundred deep is cheaper than a second pass.
 */
export async function structuralCandidates(
  m: EntityManager,
  input: { workspaceId: string; topK: number; types: readonly string[] },
): Promise<StructuralCandidate[]> {
  return completeStructural(m, input, await structuralPass(m, input, firstDepth(input)));
}

/**
 * Hybrid's two reads (rules 1 and 2) in one statement, one round trip: the vector index walk and the
 * structural top-k's first pass, as `vectorCandidates` and `structuralCandidates` read them, with the
 * same follow-ups (the exact vector query when the walk came back short, deeper structural passes
 * until the bound holds). Its transaction must have `vectorScanSettings(topK, types)`.
 */
export async function hybridCandidates(
  m: EntityManager,
  input: VectorInput & { minSimilarity: number },
): Promise<{ vector: VectorCandidate[]; structural: StructuralCandidate[] }> {
  const vector: VectorSlots = { ws: '$1', embedding: '$2', limit: '$3', types: '$6' };
  const structural: StructuralSlots = { ws: '$1', depth: '$4', topK: '$5', types: '$6' };
  const depth = firstDepth(input);
  const rows = await queryRows<PassRow & { list: 'vector' | 'structural'; at: string; distance: number | null }>(
    m,
    `WITH ${vectorCte(input.types, INDEX_ORDER(vector), vector)}, ${structuralCtes(input.types, structural)}
     SELECT * FROM (
       SELECT 'vector' AS list, row_number() OVER (ORDER BY c.distance, c.id) AS at, c.*,
              NULL::float8 AS recency, NULL::float8 AS structural, NULL::float8 AS bound, NULL::text AS listed
       FROM c
       UNION ALL
       SELECT 'structural', row_number() OVER (ORDER BY top.structural DESC, n.id), ${NODE_COLUMNS},
              NULL::float8, top.recency, top.structural, b.bound, b.listed::text
       FROM top JOIN nodes n ON n.id = top.id CROSS JOIN b
     ) both_lists ORDER BY list DESC, at`,
    [
      input.workspaceId,
      toSql(input.embedding),
      vectorDepth(input.topK, input.types),
      depth,
      input.topK,
      ...(input.types.length ? [input.types] : []),
    ],
  );
  const walked = rows
    .filter((row) => row.list === 'vector')
    .map(({ list: _l, at: _a, recency: _r, structural: _s, bound: _b, listed: _d, ...row }) => row);
  const passRows = rows
    .filter((row) => row.list === 'structural')
    .map(({ list: _l, at: _a, distance: _d, ...row }) => row);
  return {
    vector: await finishVector(m, input, walked as (NodeRow & { distance: number })[]),
    structural: await completeStructural(m, input, passOf(passRows, depth)),
  };
}

export interface KeywordCandidate extends NodeRow {
  keyword_rank: number;
}

const escapeLike = (text: string) => text.replace(/[\\%_]/g, (c) => `\\${c}`);

/**
 * Keyword candidates (issue 30 part 2; the SQL functions are in migration 1763780012400): a node
 * matches when its keyword document (name and text properties, accents folded, identifiers split
 * on case and punctuation) holds every part of the query as a prefix, through the GIN index, in
 * `weft_keyword_matches` (under row-level security `@@` may not use an index; the function applies
 * the workspace rule itself and the rows are read back under the caller's policy). Ranked: the
 * exact name, then every part as a whole word, then `ts_rank_cd` (name hits weigh more than
 * property hits), trigram similarity and importance. A query without a letter or digit (`%`, `#`)
 * has no parts; then every word of it must occur in the name (case-insensitive substring).
 */
export async function keywordCandidates(
  m: EntityManager,
  input: { workspaceId: string; q: string; topK: number; types: readonly string[] },
): Promise<KeywordCandidate[]> {
  if (/[\p{L}\p{N}]/u.test(input.q)) {
    return queryRows<KeywordCandidate>(
      m,
      `SELECT ${NODE_COLUMNS}, k.keyword_rank FROM weft_keyword_matches($1, $2::text[], $3) k
       JOIN nodes n ON n.id = k.id
       WHERE n.workspace_id = $4 AND NOT n.is_deleted ORDER BY k.match_order`,
      [input.q, input.types, input.topK, input.workspaceId],
    );
  }
  const words = input.q
    .split(/\s+/)
    .filter(Boolean)
    .map((word) => `%${escapeLike(word)}%`);
  return queryRows<KeywordCandidate>(
    m,
    `SELECT ${NODE_COLUMNS}, 0::float8 AS keyword_rank FROM nodes n
     WHERE n.workspace_id = $1 AND NOT n.is_deleted AND n.name ILIKE ALL($2::text[]) ${typeFilter(input.types, '$5')}
     ORDER BY (lower(n.name) = lower($3)) DESC, similarity(n.name, $3) DESC, n.importance_score DESC, n.id
     LIMIT $4`,
    [input.workspaceId, words, input.q, input.topK, ...(input.types.length ? [input.types] : [])],
  );
}
