import type { EntityManager } from 'typeorm';
import { queryFirst } from '../db/query';
import { NotFoundError } from '../errors';
import type { Principal } from './principal';

/**
 * The workspaces a principal may act in: a user JWT reaches every workspace its user belongs to;
 * a key or MCP token reaches only its own. Anything else is reported as missing (404), never 403.
 * (Membership rows are visible to their own user: the caller's unit of work acts as the principal's.)
 */
export async function assertWorkspaceVisible(
  m: EntityManager,
  principal: Principal,
  workspaceId: string,
): Promise<void> {
  // Postgres prints uuids in lower case; a client may send them in upper case.
  if (workspaceId.toLowerCase() === principal.workspaceId) return;
  if (principal.credential.kind !== 'user_jwt') throw new NotFoundError('Workspace not found');
  const member = await queryFirst<{ found: boolean }>(
    m,
    `SELECT EXISTS (SELECT 1 FROM memberships WHERE workspace_id = $1 AND user_id = $2) AS found`,
    [workspaceId, principal.userId],
  );
  if (!member?.found) throw new NotFoundError('Workspace not found');
}
