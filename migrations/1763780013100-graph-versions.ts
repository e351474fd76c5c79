import type { MigrationInterface, QueryRunner } from 'typeorm';
import { grantToAppRole } from './1763780008400-credit-settlement';
import { dropWorkspaceRlsSql, workspaceRlsSql } from './rls';

/*
 * Issue 31 parts 1, 2 and 5: every change of a node or an edge writes a version row in the same
 * transaction, by row triggers on `nodes` and `edges`, so no writer can forget (the API, the prompt
 * pipeline, capabilities, merges, community refreshes, the code graph, SQL functions).
 *
 * Versioned columns (the facts a person wrote): nodes' type, name, properties, connection_id,
 * base_salience, is_deleted (with updated_at riding along when it moved); edges' type, ends,
 * properties, reasoning, evidence, is_deleted, valid_from and valid_to. Not versioned: embeddings,
 * importance, reference counts, last_touch_at and degrees (derived, rewritten by touches and sweeps):
 * an UPDATE that changes only those writes no version (the trigger's WHEN clause, evaluated without
 * calling the function).
 *
 * A version keeps only the changed fields: `before` holds their old values and `after` the new
 * ones; a create has the versioned fields in `after`, a hard delete (`purge`) the whole row in
 * `before`. The graph as of T is the current row with the `before` of every later version laid
 * over it, the latest first (so the earliest wins): only versions newer than T are read, which is
 * also why retention can drop the old ones.
 *
 * Who and why come from transaction-local settings the unit of work sets (src/platform/db/
 * unit-of-work.ts, `setChangeContext`): app.user_id, app.actor_kind, app.actor_credential,
 * app.actor_run, app.actor_prompt, app.actor_capability, app.actor_call, and the operation label
 * app.change_op ('merge', 'unmerge', 'contradiction', …) which any writer may set.
 */

const setting = (name: string) => `NULLIF(current_setting('${name}', true), '')`;

const NODE_STATE = `jsonb_build_object('id', n.id, 'workspace_id', n.workspace_id, 'type', n.type, 'name', n.name,
  'properties', n.properties, 'importance_score', n.importance_score, 'base_salience', n.base_salience,
  'reference_count', n.reference_count, 'connection_id', n.connection_id, 'has_embedding', n.has_embedding,
  'last_touch_at', n.last_touch_at, 'created_at', n.created_at, 'updated_at', n.updated_at,
  'is_deleted', n.is_deleted)`;
const EDGE_STATE = `jsonb_build_object('id', e.id, 'workspace_id', e.workspace_id, 'type', e.type,
  'source_node_id', e.source_node_id, 'target_node_id', e.target_node_id, 'properties', e.properties,
  'reasoning', e.reasoning, 'evidence', e.evidence, 'created_at', e.created_at, 'is_deleted', e.is_deleted,
  'valid_from', e.valid_from, 'valid_to', e.valid_to)`;

const NODE_FIELDS = ['type', 'name', 'properties', 'connection_id', 'base_salience', 'is_deleted'];
const EDGE_FIELDS = [
  'type',
  'source_node_id',
  'target_node_id',
  'properties',
  'reasoning',
  'evidence',
  'is_deleted',
  'valid_from',
  'valid_to',
];

const changedWhen = (fields: string[]) => fields.map((f) => `OLD.${f} IS DISTINCT FROM NEW.${f}`).join(' OR ');
const collect = (fields: string[]) =>
  fields
    .map(
      (f) => `IF OLD.${f} IS DISTINCT FROM NEW.${f} THEN
      b := b || jsonb_build_object('${f}', OLD.${f}); a := a || jsonb_build_object('${f}', NEW.${f}); END IF;`,
    )
    .join('\n    ');
const snapshot = (fields: string[], row: string) =>
  `jsonb_build_object(${fields.map((f) => `'${f}', ${row}.${f}`).join(', ')})`;

const versionFunction = (kind: 'node' | 'edge', fields: string[], state: string, extra: string) => `
CREATE FUNCTION weft_version_${kind}() RETURNS trigger LANGUAGE plpgsql AS $fn$
DECLARE
  b jsonb := '{}';
  a jsonb := '{}';
  op text;
  ws uuid;
  eid uuid;
BEGIN
  IF TG_OP = 'INSERT' THEN
    op := 'create'; b := NULL; a := ${snapshot(fields, 'NEW')}; ws := NEW.workspace_id; eid := NEW.id;
  ELSIF TG_OP = 'DELETE' THEN
    op := 'purge'; a := NULL; ws := OLD.workspace_id; eid := OLD.id;
    SELECT ${state} INTO b FROM (SELECT OLD.*) ${kind === 'node' ? 'n' : 'e'};
  ELSE
    ws := NEW.workspace_id; eid := NEW.id;
    ${collect(fields)}
    ${extra}
    op := CASE WHEN NEW.is_deleted AND NOT OLD.is_deleted THEN 'delete'
               WHEN OLD.is_deleted AND NOT NEW.is_deleted THEN 'restore' ELSE 'update' END;
  END IF;
  INSERT INTO graph_versions (workspace_id, entity_kind, entity_id, operation, label, user_id, credential_kind,
    credential_id, run_id, prompt_id, capability, capability_call, before, after)
  VALUES (ws, '${kind}', eid, op, ${setting('app.change_op')}, ${setting('app.user_id')}::uuid,
    ${setting('app.actor_kind')}, ${setting('app.actor_credential')}, ${setting('app.actor_run')},
    ${setting('app.actor_prompt')}, ${setting('app.actor_capability')}, ${setting('app.actor_call')}, b, a);
  RETURN NULL;
END
$fn$;`;

const triggers = (kind: 'node' | 'edge', table: string, fields: string[]) => `
CREATE TRIGGER ${table}_version_insert AFTER INSERT ON ${table} FOR EACH ROW EXECUTE FUNCTION weft_version_${kind}();
CREATE TRIGGER ${table}_version_update AFTER UPDATE ON ${table} FOR EACH ROW
  WHEN (${changedWhen(fields)}) EXECUTE FUNCTION weft_version_${kind}();
CREATE TRIGGER ${table}_version_delete AFTER DELETE ON ${table} FOR EACH ROW EXECUTE FUNCTION weft_version_${kind}();`;

/**
 * The state as of p_at of each id: the current row (or nothing, when it was hard-deleted) with the
 * `before` of every later version over it, the latest first so the earliest wins. No row for an
 * id that did not exist then (created later, by a version or, for rows older than versioning, by
 * created_at). A row that existed deleted comes back with is_deleted true. SECURITY INVOKER: both
 * tables' row-level security applies.
 */
const asOfFunction = (kind: 'node' | 'edge', table: string, state: string, alias: string) => `
CREATE FUNCTION weft_${kind}s_as_of(p_ids uuid[], p_at timestamptz) RETURNS TABLE (id uuid, state jsonb)
LANGUAGE sql STABLE AS $fn$
  WITH cur AS (
    SELECT ${alias}.id, ${alias}.created_at, ${state} AS j FROM ${table} ${alias} WHERE ${alias}.id = ANY(p_ids)),
  ch AS (
    SELECT v.entity_id, bool_or(v.operation = 'create') AS created_after,
           weft_jsonb_merge(v.before ORDER BY v.id DESC) AS before
    FROM graph_versions v
    WHERE v.entity_kind = '${kind}' AND v.entity_id = ANY(p_ids) AND v.changed_at > p_at
    GROUP BY v.entity_id)
  SELECT coalesce(cur.id, ch.entity_id), coalesce(cur.j, '{}') || coalesce(ch.before, '{}')
  FROM cur FULL JOIN ch ON ch.entity_id = cur.id
  WHERE NOT coalesce(ch.created_after, false) AND (cur.created_at IS NULL OR cur.created_at <= p_at)
$fn$;`;

export class GraphVersions1763780013100 implements MigrationInterface {
  name = 'GraphVersions1763780013100';

  async up(q: QueryRunner): Promise<void> {
    await q.query(`
-- When the fact held, as distinct from when Weft learnt it (created_at). Existing edges held from
-- when they were written.
ALTER TABLE edges ADD COLUMN valid_from timestamptz, ADD COLUMN valid_to timestamptz;
UPDATE edges SET valid_from = created_at;
ALTER TABLE edges ALTER COLUMN valid_from SET DEFAULT now(), ALTER COLUMN valid_from SET NOT NULL,
  ADD CONSTRAINT edges_validity_check CHECK (valid_to IS NULL OR valid_to >= valid_from);

CREATE TABLE graph_versions (
  id bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
  workspace_id uuid NOT NULL REFERENCES workspaces(id),
  entity_kind text NOT NULL CHECK (entity_kind IN ('node', 'edge')),
  entity_id uuid NOT NULL,
  operation text NOT NULL CHECK (operation IN ('create', 'update', 'delete', 'restore', 'purge')),
  label text,
  changed_at timestamptz NOT NULL DEFAULT now(),
  user_id uuid,
  credential_kind text,
  credential_id text,
  run_id text,
  prompt_id text,
  capability text,
  capability_call text,
  before jsonb,
  after jsonb
);
CREATE INDEX graph_versions_entity_idx ON graph_versions (workspace_id, entity_id, id);
CREATE INDEX graph_versions_changed_idx ON graph_versions (workspace_id, entity_kind, changed_at);
CREATE INDEX graph_versions_retention_idx ON graph_versions (changed_at);
${workspaceRlsSql('graph_versions')}

CREATE AGGREGATE weft_jsonb_merge(jsonb) (SFUNC = jsonb_concat, STYPE = jsonb, INITCOND = '{}');

${versionFunction(
  'node',
  NODE_FIELDS,
  NODE_STATE,
  `IF NEW.updated_at IS DISTINCT FROM OLD.updated_at THEN
      b := b || jsonb_build_object('updated_at', OLD.updated_at);
      a := a || jsonb_build_object('updated_at', NEW.updated_at); END IF;`,
)}
${versionFunction('edge', EDGE_FIELDS, EDGE_STATE, '')}
${triggers('node', 'nodes', NODE_FIELDS)}
${triggers('edge', 'edges', EDGE_FIELDS)}

${asOfFunction('node', 'nodes', NODE_STATE, 'n')}
${asOfFunction('edge', 'edges', EDGE_STATE, 'e')}

-- Breadth-first like weft_graph_expand, over the edges as they were at p_at: a live edge that no
-- version after p_at touched was then as it is now (when it existed: created_at <= p_at); the
-- edges some later version touched are listed once with every end they had since (now and in
-- their versions' before), and each level rebuilds only those of them that touch its frontier.
CREATE FUNCTION weft_graph_expand_as_of(p_start uuid[], p_hops int, p_node_limit int, p_at timestamptz)
RETURNS TABLE (node_id uuid, depth int)
LANGUAGE plpgsql STABLE AS $fn$
DECLARE
  touched uuid[];
  t_id uuid[];
  t_end uuid[];
  near uuid[];
  visited uuid[];
  frontier uuid[];
  found uuid[];
  past uuid[];
  room int;
  fetched int;
  want int;
  d int := 0;
BEGIN
  SELECT coalesce(array_agg(DISTINCT v.entity_id), '{}') INTO touched
    FROM graph_versions v WHERE v.entity_kind = 'edge' AND v.changed_at > p_at;
  SELECT coalesce(array_agg(x.id), '{}'), coalesce(array_agg(x.node), '{}') INTO t_id, t_end FROM (
    SELECT e.id, unnest(ARRAY[e.source_node_id, e.target_node_id]) AS node FROM edges e WHERE e.id = ANY(touched)
    UNION
    SELECT v.entity_id, unnest(ARRAY[(v.before->>'source_node_id')::uuid, (v.before->>'target_node_id')::uuid])
      FROM graph_versions v
     WHERE v.entity_kind = 'edge' AND v.changed_at > p_at AND v.before ?| ARRAY['source_node_id', 'target_node_id']
  ) x WHERE x.node IS NOT NULL;
  SELECT coalesce(array_agg(DISTINCT p.id), '{}') INTO visited
    FROM weft_nodes_as_of(p_start, p_at) p WHERE NOT (p.state->>'is_deleted')::boolean;
  visited := visited[1:p_node_limit];
  frontier := visited;
  RETURN QUERY SELECT v, 0 FROM unnest(visited) v;
  WHILE d < p_hops AND cardinality(frontier) > 0 AND cardinality(visited) < p_node_limit LOOP
    d := d + 1;
    room := p_node_limit - cardinality(visited);
    SELECT coalesce(array_agg(DISTINCT t.i), '{}') INTO near
      FROM unnest(t_id, t_end) AS t(i, n) WHERE t.n = ANY(frontier);
    -- The rebuilt edges of then first (few), then today's untouched ones, read as weft_graph_expand
    -- reads them: at most twice the room, widened only when a full batch was too small.
    SELECT coalesce(array_agg(DISTINCT x.nbr), '{}') INTO past FROM (
      SELECT CASE WHEN (p.state->>'source_node_id')::uuid = ANY(frontier)
                  THEN (p.state->>'target_node_id')::uuid ELSE (p.state->>'source_node_id')::uuid END AS nbr
        FROM weft_edges_as_of(near, p_at) p
       WHERE NOT (p.state->>'is_deleted')::boolean
         AND ((p.state->>'source_node_id')::uuid = ANY(frontier) OR (p.state->>'target_node_id')::uuid = ANY(frontier))
    ) x WHERE x.nbr NOT IN (SELECT unnest(visited));
    want := room * 2;
    LOOP
      SELECT coalesce(array_agg(DISTINCT c.nbr), '{}'), count(*) INTO found, fetched FROM (
        SELECT x.nbr FROM (
          SELECT e.target_node_id AS nbr FROM edges e
           WHERE e.source_node_id = ANY(frontier) AND NOT e.is_deleted AND e.created_at <= p_at
             AND NOT (e.id = ANY(near))
          UNION ALL
          SELECT e.source_node_id FROM edges e
           WHERE e.target_node_id = ANY(frontier) AND NOT e.is_deleted AND e.created_at <= p_at
             AND NOT (e.id = ANY(near))
        ) x
        WHERE x.nbr NOT IN (SELECT unnest(visited)) AND NOT (x.nbr = ANY(past))
        LIMIT want
      ) c;
      EXIT WHEN fetched < want OR cardinality(past) + cardinality(found) >= room OR want >= 64 * room;
      want := want * 4;
    END LOOP;
    found := past || found;
    found := found[1:room];
    EXIT WHEN cardinality(found) = 0;
    RETURN QUERY SELECT f, d FROM unnest(found) f;
    visited := visited || found;
    frontier := found;
  END LOOP;
END
$fn$;

-- Retention (part 5): versions older than the horizon, in every workspace, at most batch_size per call.
CREATE FUNCTION weft_purge_graph_versions(older_than interval, batch_size integer) RETURNS integer
  LANGUAGE sql VOLATILE SECURITY DEFINER SET search_path = public
  AS $$
    WITH doomed AS (
      SELECT id FROM graph_versions WHERE changed_at < now() - older_than ORDER BY changed_at LIMIT batch_size
    ), deleted AS (
      DELETE FROM graph_versions g USING doomed WHERE g.id = doomed.id RETURNING 1
    )
    SELECT count(*)::int FROM deleted
  $$;
REVOKE ALL ON FUNCTION weft_purge_graph_versions(interval, integer) FROM PUBLIC;
`);
    await grantToAppRole(q, 'weft_purge_graph_versions(interval, integer)');
  }

  async down(q: QueryRunner): Promise<void> {
    await q.query(`
DROP FUNCTION IF EXISTS weft_purge_graph_versions(interval, integer);
DROP FUNCTION IF EXISTS weft_graph_expand_as_of(uuid[], int, int, timestamptz);
DROP FUNCTION IF EXISTS weft_nodes_as_of(uuid[], timestamptz), weft_edges_as_of(uuid[], timestamptz);
DROP TRIGGER IF EXISTS nodes_version_insert ON nodes;
DROP TRIGGER IF EXISTS nodes_version_update ON nodes;
DROP TRIGGER IF EXISTS nodes_version_delete ON nodes;
DROP TRIGGER IF EXISTS edges_version_insert ON edges;
DROP TRIGGER IF EXISTS edges_version_update ON edges;
DROP TRIGGER IF EXISTS edges_version_delete ON edges;
DROP FUNCTION IF EXISTS weft_version_node(), weft_version_edge();
DROP AGGREGATE IF EXISTS weft_jsonb_merge(jsonb);
${dropWorkspaceRlsSql('graph_versions')}
DROP TABLE IF EXISTS graph_versions;
ALTER TABLE edges DROP CONSTRAINT IF EXISTS edges_validity_check, DROP COLUMN IF EXISTS valid_to,
  DROP COLUMN IF EXISTS valid_from;
`);
  }
}
