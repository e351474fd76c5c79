import type { MigrationInterface, QueryRunner } from 'typeorm';

/**
 * Keyword search (issue 30 part 2, src/search/keyword.ts): a full-text document per node, kept by
 * Postgres itself as a generated column, so no writer can forget it.
 *
 * - `weft_keyword_text`: accents folded (`unaccent`, dictionary named so the result is fixed, as in
 *   the merges migration), then the text as written followed by its identifier parts: camelCase and
 *   PascalCase split at each case change, every run of punctuation a space. `getUserName` gives the
 *   lexemes getusername, get, user and name; `ERR_CONN_42` gives err, conn and 42.
 * - `weft_keyword_document`: the name (weight A) and every string value anywhere in `properties`
 *   (weight B, at most the first 100,000 characters, well inside tsvector's 1 MB), with the `simple`
 *   configuration: identifiers and codes are not English words, so no stemming and no stop words.
 * - `weft_keyword_query`: the same split applied to a query, every part required; `prefix` makes
 *   each part a prefix (`smith` finds Smithsonian). NULL when the query has no letters or digits.
 * - A GIN index over the live rows.
 * - `weft_keyword_matches`: under row-level security Postgres uses only leakproof operators as
 *   index conditions, and `@@` is not leakproof, so a policy-filtered match reads the whole
 *   workspace (300 ms at 100k nodes). Like weft_name_matches (migration 1763780007200) this
 *   definer function applies the workspace rule explicitly, ranks, and returns only ids and ranks,
 *   which the caller joins back to `nodes` under its own policy. EXECUTE plans it for the actual
 *   query, so the tsquery is a constant the GIN index can use.
 */
export class KeywordSearch1763780012400 implements MigrationInterface {
  name = 'KeywordSearch1763780012400';

  async up(q: QueryRunner): Promise<void> {
    await q.query(`
CREATE FUNCTION weft_keyword_parts(input text) RETURNS text
  LANGUAGE sql IMMUTABLE PARALLEL SAFE STRICT
  AS $$ SELECT btrim(regexp_replace(regexp_replace(regexp_replace(input,
           '([[:lower:][:digit:]])([[:upper:]])', '\\1 \\2', 'g'),
           '([[:upper:]]+)([[:upper:]][[:lower:]])', '\\1 \\2', 'g'),
           '[^[:alnum:]]+', ' ', 'g')) $$;

CREATE FUNCTION weft_keyword_text(input text) RETURNS text
  LANGUAGE sql IMMUTABLE PARALLEL SAFE STRICT
  AS $$ SELECT folded || ' ' || public.weft_keyword_parts(folded)
        FROM (SELECT public.unaccent('public.unaccent'::regdictionary, input) AS folded) f $$;

CREATE FUNCTION weft_keyword_document(name text, properties jsonb) RETURNS tsvector
  LANGUAGE sql IMMUTABLE PARALLEL SAFE
  AS $$ SELECT setweight(to_tsvector('simple'::regconfig, coalesce(public.weft_keyword_text(name), '')), 'A')
            || setweight(to_tsvector('simple'::regconfig, coalesce(public.weft_keyword_text(left((
                 SELECT string_agg(v #>> '{}', ' ')
                 FROM jsonb_path_query(coalesce(properties, '{}'::jsonb), 'strict $.**') v
                 WHERE jsonb_typeof(v) = 'string'), 100000)), '')), 'B') $$;

CREATE FUNCTION weft_keyword_query(input text, prefix boolean) RETURNS tsquery
  LANGUAGE sql IMMUTABLE PARALLEL SAFE STRICT
  AS $$ SELECT to_tsquery('simple'::regconfig,
                 string_agg(quote_literal(part) || CASE WHEN prefix THEN ':*' ELSE '' END, ' & '))
        FROM regexp_split_to_table(lower(public.weft_keyword_parts(
               public.unaccent('public.unaccent'::regdictionary, input))), ' ') part
        WHERE part <> '' $$;

ALTER TABLE nodes ADD COLUMN keyword_document tsvector
  GENERATED ALWAYS AS (public.weft_keyword_document(name, properties)) STORED;
CREATE INDEX nodes_keyword_document_idx ON nodes USING gin (keyword_document) WHERE NOT is_deleted;

CREATE FUNCTION weft_keyword_matches(p_q text, p_types text[], p_limit int)
RETURNS TABLE (id uuid, keyword_rank double precision, match_order int)
LANGUAGE plpgsql STABLE SECURITY DEFINER SET search_path = public AS $fn$
BEGIN
  RETURN QUERY EXECUTE $sql$
    SELECT x.id, x.keyword_rank, (row_number() OVER (ORDER BY x.exact_name DESC, x.exact_parts DESC,
             x.keyword_rank DESC, x.trigram DESC, x.importance_score DESC, x.id))::int
    FROM (SELECT n.id,
                 coalesce(ts_rank_cd(n.keyword_document, weft_keyword_query($1, true)), 0)::float8 AS keyword_rank,
                 lower(n.name) = lower($1) AS exact_name,
                 coalesce(n.keyword_document @@ weft_keyword_query($1, false), false) AS exact_parts,
                 similarity(n.name, $1) AS trigram, n.importance_score
          FROM nodes n
          WHERE n.workspace_id = weft_current_workspace() AND NOT n.is_deleted
            AND n.keyword_document @@ weft_keyword_query($1, true)
            AND (cardinality($2) = 0 OR n.type = ANY($2))) x
    ORDER BY 3 LIMIT $3$sql$
  USING p_q, coalesce(p_types, '{}'::text[]), p_limit;
END
$fn$;
REVOKE ALL ON FUNCTION weft_keyword_matches(text, text[], int) FROM PUBLIC;
`);
    // The app role is the only caller; it learns nothing its own policy would hide.
    const [{ app }] = await q.query(`SELECT string_agg(quote_ident(grantee), ',') AS app FROM (
      SELECT DISTINCT grantee FROM information_schema.role_table_grants WHERE table_name = 'nodes'
        AND privilege_type = 'SELECT'
        AND grantee <> current_user) g`);
    if (app) await q.query(`GRANT EXECUTE ON FUNCTION weft_keyword_matches(text, text[], int) TO ${app}`);
  }

  async down(q: QueryRunner): Promise<void> {
    await q.query(`
DROP FUNCTION IF EXISTS weft_keyword_matches(text, text[], int);
DROP INDEX IF EXISTS nodes_keyword_document_idx;
ALTER TABLE nodes DROP COLUMN IF EXISTS keyword_document;
DROP FUNCTION IF EXISTS weft_keyword_query(text, boolean);
DROP FUNCTION IF EXISTS weft_keyword_document(text, jsonb);
DROP FUNCTION IF EXISTS weft_keyword_text(text);
DROP FUNCTION IF EXISTS weft_keyword_parts(text);
`);
  }
}
