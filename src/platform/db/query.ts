import { createHash } from 'node:crypto';
import type { EntityManager } from 'typeorm';

/**
 * The one way Weft reads rows from raw SQL. TypeORM's `manager.query()` answers an UPDATE or
 * DELETE with `[rows, affected]` and a SELECT or INSERT with the rows; this asks the driver for
 * its structured result instead, so every command (`UPDATE … RETURNING` included) gives rows.
 *
 * Raw SQL is for what the query builder cannot say: RLS functions, recursive CTEs, vector
 * operators, conditional updates. The row type is the statement's column list: keep the two
 * together in the feature's `repository.ts`.
 */
export async function queryRows<Row>(m: EntityManager, sql: string, params: readonly unknown[] = []): Promise<Row[]> {
  // Units of work always run on their transaction's query runner; a bare manager would take a
  // pooled connection without the workspace setting and see no rows.
  if (!m.queryRunner) throw new Error('queryRows needs a unit of work’s transaction');
  const result = await m.queryRunner.query(sql, [...params], true);
  return (result.records ?? []) as Row[];
}

/** The first row, or undefined when the statement returned none. */
export async function queryFirst<Row>(
  m: EntityManager,
  sql: string,
  params: readonly unknown[] = [],
): Promise<Row | undefined> {
  const [first] = await queryRows<Row>(m, sql, params);
  return first;
}

/** How many rows an UPDATE or DELETE touched (for statements without RETURNING). */
export async function affectedRows(m: EntityManager, sql: string, params: readonly unknown[] = []): Promise<number> {
  if (!m.queryRunner) throw new Error('affectedRows needs a unit of work’s transaction');
  const result = await m.queryRunner.query(sql, [...params], true);
  return result.affected ?? result.records?.length ?? 0;
}

interface NamedQueryClient {
  query(config: { name: string; text: string; values: unknown[] }): Promise<{ rows: unknown[] }>;
}

// Statement names by text: a name is the text's hash, so two texts never share one on a connection.
const statementNames = new Map<string, string>();
const STATEMENT_NAMES_MAX = 1000;

/**
 * `queryRows` as a named statement: each pooled connection parses it once, and Postgres may then keep
 * a generic plan for it instead of planning every call (≈ 1 ms for the hybrid search's statement).
 * For hot statements whose plan does not depend on their values (see `plan_cache_mode`).
 */
export async function queryNamed<Row>(m: EntityManager, sql: string, params: readonly unknown[] = []): Promise<Row[]> {
  if (!m.queryRunner) throw new Error('queryNamed needs a unit of work’s transaction');
  let name = statementNames.get(sql);
  if (!name) {
    name = `weft_${createHash('sha256').update(sql).digest('hex').slice(0, 32)}`;
    if (statementNames.size < STATEMENT_NAMES_MAX) statementNames.set(sql, name);
  }
  const client = (await m.queryRunner.connect()) as NamedQueryClient;
  return (await client.query({ name, text: sql, values: [...params] })).rows as Row[];
}
