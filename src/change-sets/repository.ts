import type { EntityManager } from 'typeorm';
import type { ChangeSetConflict, ChangeSetStatus } from '../approvals/schemas';
import type { StoredCredential } from '../platform/auth/stored-principal';
import { queryFirst, queryRows } from '../platform/db/query';
import type { ChangeSetOperations } from './schemas';

/** The resolver's credential, as the change-set records who resolved it. */
export type ResolverCredential = Pick<StoredCredential, 'kind' | 'id'>;

export interface ChangeSetRecord {
  id: string;
  workspace_id: string;
  approval_id: string;
  status: ChangeSetStatus;
  source_kind: 'prompt' | 'capability';
  source_prompt_id: string | null;
  source_capability: string | null;
  source_call: string | null;
  operations: ChangeSetOperations;
  staged_by: string;
  /** The stager's, frozen at staging (its expiry for the identity check at apply). */
  staged_by_credential: StoredCredential;
  resolved_by: string | null;
  resolved_by_credential: ResolverCredential | null;
  notes: string | null;
  conflicts: ChangeSetConflict[] | null;
  applied: { node_ids: string[]; edge_ids: string[] } | null;
  created_at: Date;
  resolved_at: Date | null;
}

const COLUMNS = `id, workspace_id, approval_id, status, source_kind, source_prompt_id, source_capability, source_call,
  operations, staged_by, staged_by_credential, resolved_by, resolved_by_credential, notes, conflicts, applied,
  created_at, resolved_at`;

export interface NewChangeSet {
  workspaceId: string;
  source: { kind: 'prompt'; promptId: string } | { kind: 'capability'; capability: string; call: string };
  operations: ChangeSetOperations;
  stagedBy: string;
  credential: StoredCredential;
}

export const insertChangeSet = (m: EntityManager, input: NewChangeSet) =>
  queryFirst<ChangeSetRecord>(
    m,
    `INSERT INTO change_sets (workspace_id, source_kind, source_prompt_id, source_capability, source_call, operations,
       staged_by, staged_by_credential)
     VALUES ($1, $2, $3, $4, $5, $6::jsonb, $7, $8::jsonb) RETURNING ${COLUMNS}`,
    [
      input.workspaceId,
      input.source.kind,
      input.source.kind === 'prompt' ? input.source.promptId : null,
      input.source.kind === 'capability' ? input.source.capability : null,
      input.source.kind === 'capability' ? input.source.call : null,
      JSON.stringify(input.operations),
      input.stagedBy,
      JSON.stringify(input.credential),
    ],
  ) as Promise<ChangeSetRecord>;

export const findChangeSet = (m: EntityManager, id: string) =>
  queryFirst<ChangeSetRecord>(m, `SELECT ${COLUMNS} FROM change_sets WHERE id = $1`, [id]);

export const findChangeSetOfPrompt = (m: EntityManager, promptId: string) =>
  queryFirst<ChangeSetRecord>(m, `SELECT ${COLUMNS} FROM change_sets WHERE source_prompt_id = $1`, [promptId]);

/** By its approval's id, locked: of two resolves one goes first and the other sees what it did. */
export const lockChangeSetByApproval = (m: EntityManager, approvalId: string) =>
  queryFirst<ChangeSetRecord>(m, `SELECT ${COLUMNS} FROM change_sets WHERE approval_id = $1 FOR UPDATE`, [approvalId]);

export const findChangeSetByApproval = (m: EntityManager, approvalId: string) =>
  queryFirst<ChangeSetRecord>(m, `SELECT ${COLUMNS} FROM change_sets WHERE approval_id = $1`, [approvalId]);

export const listChangeSets = (m: EntityManager, query: { statuses?: readonly ChangeSetStatus[]; limit: number }) =>
  queryRows<ChangeSetRecord>(
    m,
    `SELECT ${COLUMNS} FROM change_sets WHERE ($1::text[] IS NULL OR status = ANY($1::text[]))
     ORDER BY created_at DESC, id DESC LIMIT $2`,
    [query.statuses ? [...query.statuses] : null, query.limit],
  );

export interface Resolution {
  id: string;
  status: Exclude<ChangeSetStatus, 'pending'>;
  userId: string | null;
  credential: ResolverCredential | null;
  notes: string | null;
  conflicts: ChangeSetConflict[] | null;
  applied: { node_ids: string[]; edge_ids: string[] } | null;
}

/** Pending → its outcome, once. */
export const resolveChangeSet = (m: EntityManager, input: Resolution) =>
  queryFirst<ChangeSetRecord>(
    m,
    `UPDATE change_sets SET status = $2, resolved_by = $3, resolved_by_credential = $4::jsonb, notes = $5,
       conflicts = $6::jsonb, applied = $7::jsonb, resolved_at = now()
     WHERE id = $1 AND status = 'pending' RETURNING ${COLUMNS}`,
    [
      input.id,
      input.status,
      input.userId,
      input.credential ? JSON.stringify(input.credential) : null,
      input.notes,
      input.conflicts ? JSON.stringify(input.conflicts) : null,
      input.applied ? JSON.stringify(input.applied) : null,
    ],
  );

/** The live nodes among `ids` with their properties; locked (in id order) when `lock`. */
export const liveNodesWithProperties = (m: EntityManager, ids: readonly string[], lock: boolean) =>
  queryRows<{ id: string; name: string; properties: Record<string, unknown> }>(
    m,
    `SELECT id, name, properties FROM nodes WHERE id = ANY($1::uuid[]) AND NOT is_deleted
     ORDER BY id ${lock ? 'FOR UPDATE' : ''}`,
    [[...ids]],
  );

/** A prompt undone (failed, cancelled, abandoned) takes its pending change-set back: nobody reviews it. */
export const withdrawChangeSetOfPrompt = async (m: EntityManager, promptId: string) =>
  (
    await queryRows<{ id: string }>(
      m,
      `UPDATE change_sets SET status = 'withdrawn', resolved_at = now()
       WHERE source_prompt_id = $1 AND status = 'pending' RETURNING id`,
      [promptId],
    )
  ).length > 0;
