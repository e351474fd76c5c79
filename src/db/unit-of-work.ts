import type { DataSource, EntityManager } from 'typeorm';

/**
 * Who a unit of work runs as. Row-level security policies read these settings; anything left
 * unset fails closed (the policy compares with NULL and no row matches).
 */
export interface Scope {
  workspaceId?: string;
  userId?: string;
  /** Set only while authenticating: lets exactly the credential with this hash be read. */
  keyHash?: string;
}

export type UnitOfWork = <T>(scope: Scope, work: (manager: EntityManager) => Promise<T>) => Promise<T>;

/**
 * Runs `work` in one transaction whose first statement sets the scope with `set_config(..., true)`:
 * transaction-local, bound as parameters, and gone when the pooled connection is reused.
 * Every repository a service uses must come from the `manager` passed in.
 */
export function createUnitOfWork(dataSource: DataSource): UnitOfWork {
  return (scope, work) =>
    dataSource.transaction(async (manager) => {
      await manager.query(
        `SELECT set_config('app.workspace_id', $1, true), set_config('app.user_id', $2, true), set_config('app.key_hash', $3, true)`,
        [scope.workspaceId ?? '', scope.userId ?? '', scope.keyHash ?? ''],
      );
      return work(manager);
    });
}
