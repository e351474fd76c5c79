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
