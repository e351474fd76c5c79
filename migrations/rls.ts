/**
 * SQL for workspace row-level security. Every workspace-scoped table gets the same forced policy,
 * so the rule lives here once. An unset `app.workspace_id` reads as '' after a transaction that set
 * it, hence NULLIF: the policy then compares with NULL and fails closed instead of raising.
 */
export const CURRENT_WORKSPACE = `weft_current_workspace()`;
export const CURRENT_USER = `weft_current_user()`;

export const rlsFunctionsSql = `
CREATE OR REPLACE FUNCTION weft_current_workspace() RETURNS uuid
  LANGUAGE sql STABLE PARALLEL SAFE
  AS $$ SELECT NULLIF(current_setting('app.workspace_id', true), '')::uuid $$;
CREATE OR REPLACE FUNCTION weft_current_user() RETURNS uuid
  LANGUAGE sql STABLE PARALLEL SAFE
  AS $$ SELECT NULLIF(current_setting('app.user_id', true), '')::uuid $$;
CREATE OR REPLACE FUNCTION weft_current_key_hash() RETURNS text
  LANGUAGE sql STABLE PARALLEL SAFE
  AS $$ SELECT NULLIF(current_setting('app.key_hash', true), '') $$;
`;

/** Forced RLS with one policy; `using` defaults to the current-workspace rule. */
export function workspaceRlsSql(
  table: string,
  using = `workspace_id = ${CURRENT_WORKSPACE}`,
  withCheck = using,
): string {
  return `
ALTER TABLE ${table} ENABLE ROW LEVEL SECURITY;
ALTER TABLE ${table} FORCE ROW LEVEL SECURITY;
CREATE POLICY ${table}_isolation ON ${table} USING (${using}) WITH CHECK (${withCheck});`;
}

export function dropWorkspaceRlsSql(table: string): string {
  return `DROP POLICY IF EXISTS ${table}_isolation ON ${table};`;
}
