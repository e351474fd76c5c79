import type { Principal } from '../platform/auth/principal';
import { scopeOf } from '../platform/auth/principal';
import { iso } from '../platform/dates';
import type { UnitOfWork } from '../platform/db/unit-of-work';
import { NotFoundError } from '../platform/errors';
import { previewChangeSet } from './apply';
import type { ChangeSetRecord } from './repository';
import { findChangeSet, listChangeSets } from './repository';
import type { ChangeSetListQuery, ChangeSetRow } from './schemas';

export const changeSetRow = (row: ChangeSetRecord): ChangeSetRow => ({
  change_set_id: row.id,
  approval_id: row.approval_id,
  status: row.status,
  source: {
    kind: row.source_kind,
    prompt_id: row.source_prompt_id,
    capability: row.source_capability,
    call: row.source_call,
  },
  operations: row.operations,
  staged_by: row.staged_by,
  staged_by_credential: { kind: row.staged_by_credential.kind, id: row.staged_by_credential.id },
  resolved_by: row.resolved_by,
  resolved_by_credential: row.resolved_by_credential,
  notes: row.notes,
  conflicts: row.conflicts,
  applied: row.applied,
  created_at: iso(row.created_at),
  resolved_at: iso(row.resolved_at),
});

/** The change-set routes: a list and one with its diff against the graph now. */
export function createChangeSetService(deps: { uow: UnitOfWork }) {
  const { uow } = deps;
  return {
    list: (principal: Principal, query: ChangeSetListQuery) =>
      uow(scopeOf(principal), async (m) => ({
        change_sets: (
          await listChangeSets(m, { ...(query.status ? { statuses: [query.status] } : {}), limit: query.limit })
        ).map(changeSetRow),
      })),

    get: (principal: Principal, changeSetId: string) =>
      uow({ ...scopeOf(principal), snapshot: true }, async (m) => {
        const row = await findChangeSet(m, changeSetId);
        if (!row) throw new NotFoundError({ error: 'change_set_not_found', change_set_id: changeSetId });
        return {
          ...changeSetRow(row),
          preview: row.status === 'pending' ? await previewChangeSet(m, row.operations) : null,
        };
      }),
  };
}

export type ChangeSetService = ReturnType<typeof createChangeSetService>;
