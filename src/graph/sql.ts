import type { EntityManager } from 'typeorm';

/**
 * The rows a statement returns, whatever its command: TypeORM's plain `query()` answers an
 * UPDATE or DELETE with `[rows, count]` instead of the rows, which an `UPDATE … RETURNING` needs.
 * Units of work always carry their transaction's query runner.
 */
export async function rowsOf<T>(m: EntityManager, sql: string, params: unknown[] = []): Promise<T[]> {
  if (!m.queryRunner) throw new Error('rowsOf needs the unit of work’s transaction');
  const result = await m.queryRunner.query(sql, params, true);
  return (result.records ?? []) as T[];
}
