import type { MigrationInterface, QueryRunner } from 'typeorm';
import { workspaceRlsSql } from './rls';

/**
 * Person resolution and the merge queue (knowledge-graph-service-api.md §2.4 and §3): candidates, the actions taken on
 * them, and the matching rules as immutable SQL functions so that the partial indexes on `nodes`
 * and the resolver's query share one definition (src/merges/person-rules.ts documents them).
 */
export class Merges1763780006000 implements MigrationInterface {
  name = 'Merges1763780006000';

  async up(q: QueryRunner): Promise<void> {
    await q.query(`
-- Which node types describe people; mirrored by isPersonType() in src/merges/person-rules.ts.
CREATE FUNCTION weft_is_person_type(node_type text) RETURNS boolean
  LANGUAGE sql IMMUTABLE PARALLEL SAFE STRICT
  AS $$ SELECT node_type IN ('person', 'contact', 'employee') OR node_type ~ '[.:]person$' $$;

-- The normalised name: accents folded (unaccent), lower case, apostrophes dropped, every other run
-- of punctuation or whitespace one space, trimmed. NULL when nothing is left, so it never matches.
-- unaccent() is only STABLE because its dictionary could change; naming the dictionary explicitly
-- makes the result fixed, which is what an index expression needs.
CREATE FUNCTION weft_person_name_key(name text) RETURNS text
  LANGUAGE sql IMMUTABLE PARALLEL SAFE STRICT
  AS $$ SELECT NULLIF(btrim(regexp_replace(
           regexp_replace(lower(public.unaccent('public.unaccent'::regdictionary, name)), '[''’‘\`´ʼ]', '', 'g'),
           '[^[:alnum:]]+', ' ', 'g')), '') $$;

-- The matching email: properties.email when it is a string, trimmed and lower-cased; NULL otherwise.
CREATE FUNCTION weft_person_email_key(properties jsonb) RETURNS text
  LANGUAGE sql IMMUTABLE PARALLEL SAFE STRICT
  AS $$ SELECT CASE WHEN jsonb_typeof(properties -> 'email') = 'string'
                    THEN NULLIF(lower(btrim(properties ->> 'email', E' \\t\\r\\n')), '') END $$;

CREATE INDEX nodes_person_name_key_idx ON nodes (workspace_id, weft_person_name_key(name))
  WHERE NOT is_deleted AND weft_is_person_type(type);
CREATE INDEX nodes_person_email_key_idx ON nodes (workspace_id, weft_person_email_key(properties))
  WHERE NOT is_deleted AND weft_is_person_type(type);

CREATE TABLE merge_candidates (
  id uuid PRIMARY KEY DEFAULT gen_random_uuid(),
  workspace_id uuid NOT NULL REFERENCES workspaces(id),
  -- The older node survives; the newer one is merged into it.
  survivor_node_id uuid NOT NULL,
  duplicate_node_id uuid NOT NULL,
  status text NOT NULL DEFAULT 'pending' CHECK (status IN ('pending', 'applied', 'rejected', 'superseded')),
  match_reasons text[] NOT NULL
    CHECK (cardinality(match_reasons) > 0 AND match_reasons <@ ARRAY['email_match', 'normalized_name_match']),
  confidence_score numeric(3, 2) NOT NULL CHECK (confidence_score BETWEEN 0 AND 1),
  created_at timestamptz NOT NULL DEFAULT now(),
  updated_at timestamptz NOT NULL DEFAULT now(),
  resolved_at timestamptz,
  CHECK (survivor_node_id <> duplicate_node_id),
  UNIQUE (workspace_id, id),
  FOREIGN KEY (workspace_id, survivor_node_id) REFERENCES nodes (workspace_id, id),
  FOREIGN KEY (workspace_id, duplicate_node_id) REFERENCES nodes (workspace_id, id)
);
-- One candidate per unordered pair per workspace, for good: a rejected pair is never proposed again.
CREATE UNIQUE INDEX merge_candidates_pair_idx ON merge_candidates
  (workspace_id, LEAST(survivor_node_id, duplicate_node_id), GREATEST(survivor_node_id, duplicate_node_id));
CREATE INDEX merge_candidates_pending_idx ON merge_candidates (workspace_id, created_at DESC, id DESC)
  WHERE status = 'pending';
CREATE INDEX merge_candidates_survivor_idx ON merge_candidates (workspace_id, survivor_node_id)
  WHERE status = 'pending';
CREATE INDEX merge_candidates_duplicate_idx ON merge_candidates (workspace_id, duplicate_node_id)
  WHERE status = 'pending';

CREATE TABLE merge_actions (
  id uuid PRIMARY KEY DEFAULT gen_random_uuid(),
  workspace_id uuid NOT NULL REFERENCES workspaces(id),
  candidate_id uuid NOT NULL,
  action text NOT NULL CHECK (action IN ('merged', 'rejected')),
  survivor_node_id uuid NOT NULL,
  duplicate_node_id uuid NOT NULL,
  -- NULL: the system (auto-merge).
  performed_by uuid REFERENCES users(id),
  notes text,
  -- What the merge did (edges re-pointed and removed, candidates superseded), for the audit trail.
  details jsonb NOT NULL DEFAULT '{}',
  created_at timestamptz NOT NULL DEFAULT now(),
  FOREIGN KEY (workspace_id, candidate_id) REFERENCES merge_candidates (workspace_id, id),
  -- A candidate is resolved once.
  UNIQUE (workspace_id, candidate_id)
);
`);
    await q.query(workspaceRlsSql('merge_candidates'));
    await q.query(workspaceRlsSql('merge_actions'));
  }

  async down(q: QueryRunner): Promise<void> {
    await q.query(`
DROP TABLE IF EXISTS merge_actions, merge_candidates;
DROP INDEX IF EXISTS nodes_person_name_key_idx, nodes_person_email_key_idx;
DROP FUNCTION IF EXISTS weft_person_email_key(jsonb), weft_person_name_key(text), weft_is_person_type(text);
`);
  }
}
