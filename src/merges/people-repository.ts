import type { EntityManager } from 'typeorm';
import { queryFirst, queryRows } from '../platform/db/query';
import { NotFoundError } from '../platform/errors';
import { Workspace } from '../tenancy/entities';

// The resolver's reads. Raw SQL: the matching keys are SQL functions (weft_person_*), the same
// expressions the partial indexes of migrations/1763780006000-merges.ts are built on.

export interface PersonNode {
  id: string;
  created_at: Date;
  is_person: boolean;
  name_key: string | null;
  email_key: string | null;
}

export function loadLiveNodeKeys(m: EntityManager, nodeId: string): Promise<PersonNode | undefined> {
  return queryFirst<PersonNode>(
    m,
    `SELECT id, created_at, weft_is_person_type(type) AS is_person,
            weft_person_name_key(name) AS name_key, weft_person_email_key(properties) AS email_key
     FROM nodes WHERE id = $1 AND NOT is_deleted`,
    [nodeId],
  );
}

/** Both nodes' matching keys, dead or alive: the evidence of a pair (person-rules.ts pairEvidence). */
export function loadPairKeys(
  m: EntityManager,
  ids: [string, string],
): Promise<{ id: string; name_key: string | null; email_key: string | null }[]> {
  return queryRows(
    m,
    `SELECT id, weft_person_name_key(name) AS name_key, weft_person_email_key(properties) AS email_key
     FROM nodes WHERE id = ANY($1::uuid[])`,
    [ids],
  );
}

export interface PersonMatch {
  id: string;
  created_at: Date;
  email: boolean;
  name: boolean;
}

/**
 * Live people of the workspace sharing the email key or the name key, strongest first. The
 * predicates repeat the partial indexes' expressions so both indexes serve the OR.
 */
export function findMatchingPeople(
  m: EntityManager,
  input: { workspaceId: string; node: PersonNode; limit: number },
): Promise<PersonMatch[]> {
  return queryRows<PersonMatch>(
    m,
    `SELECT id, created_at, email, name FROM (
       SELECT n.id, n.created_at,
              coalesce(weft_person_email_key(n.properties) = $3, false) AS email,
              coalesce(weft_person_name_key(n.name) = $4, false) AS name
       FROM nodes n
       WHERE n.workspace_id = $1 AND NOT n.is_deleted AND weft_is_person_type(n.type) AND n.id <> $2
         AND (weft_person_email_key(n.properties) = $3 OR weft_person_name_key(n.name) = $4)
     ) matches
     ORDER BY email DESC, name DESC, created_at, id
     LIMIT $5`,
    [input.workspaceId, input.node.id, input.node.email_key, input.node.name_key, input.limit],
  );
}

/** The tenant the resolver's (zero-credit) charge is booked to: derived here, never trusted from input. */
export async function tenantOfWorkspace(m: EntityManager, workspaceId: string): Promise<string> {
  const workspace = await m
    .getRepository(Workspace)
    .findOne({ select: { tenantId: true }, where: { id: workspaceId } });
  if (!workspace) throw new NotFoundError('Workspace not found');
  return workspace.tenantId;
}
