import type { EntityManager } from 'typeorm';
import { recordApprovalSubject } from '../approvals/repository';
import type { Principal } from '../platform/auth/principal';
import { freezeCredential } from '../platform/auth/stored-principal';
import type { NewChangeSet } from './repository';
import { insertChangeSet } from './repository';
import type { ChangeSetOperations } from './schemas';

/**
 * Stages a change-set in the caller's transaction instead of writing (issue 31 part 4): the
 * proposed operations wait for a reviewer, whose approval applies them (`applyChangeSet`). The
 * stager's user and credential are kept: the separation rules keep that credential from resolving it,
 * and an approval applies it only while that credential may still act.
 */
export async function stageChangeSet(
  m: EntityManager,
  stager: Pick<Principal, 'workspaceId' | 'userId'> & {
    credential: { kind: string; id?: string | null; expiresAt?: Date | string | null };
  },
  source: NewChangeSet['source'],
  operations: ChangeSetOperations,
): Promise<{ change_set_id: string; approval_id: string }> {
  const row = await insertChangeSet(m, {
    workspaceId: stager.workspaceId,
    source,
    operations,
    stagedBy: stager.userId,
    credential: freezeCredential(stager.credential),
  });
  await recordApprovalSubject(m, {
    approvalId: row.approval_id,
    workspaceId: stager.workspaceId,
    subject: 'change_set',
  });
  return { change_set_id: row.id, approval_id: row.approval_id };
}

/**
 * Whether an agent's graph writes stage a change-set in this workspace: an agent is an MCP token's
 * call or a run's step (`runId`), whatever credential dispatched the run (issue 40).
 */
export const stagesAgentWrites = (
  call: { principal: Pick<Principal, 'credential'>; runId?: string },
  staging: { agent_writes: boolean },
) => staging.agent_writes && (call.principal.credential.kind === 'mcp_token' || call.runId !== undefined);

/** jsonb values compared as Postgres stores them: objects with their keys sorted. */
function canonical(value: unknown): string {
  if (value === undefined || value === null) return 'null';
  if (Array.isArray(value)) return `[${value.map(canonical).join(',')}]`;
  if (typeof value === 'object') {
    const entries = Object.entries(value as Record<string, unknown>).sort(([a], [b]) => (a < b ? -1 : 1));
    return `{${entries.map(([key, item]) => `${JSON.stringify(key)}:${canonical(item)}`).join(',')}}`;
  }
  return JSON.stringify(value);
}
export const sameValue = (a: unknown, b: unknown) => canonical(a) === canonical(b);
