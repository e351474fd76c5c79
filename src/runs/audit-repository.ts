// A run's hash chain (`run_audit`): links appended one at a time under the run's lock.
import type { EntityManager } from 'typeorm';
import { canonicalJson } from '../capabilities/idempotency';
import { queryFirst } from '../platform/db/query';
import { GENESIS_HASH } from './audit';
import type { AuditKind } from './entities';
import { RunAuditLink } from './entities';
import type { AuditRef } from './event-repository';
import { lockExecution } from './execution-repository';

const audit = (m: EntityManager) => m.getRepository(RunAuditLink);

/**
 * Appends a link to the run's chain. The execution row is locked first, so the links of one run
 * are appended one at a time and each reads the head its predecessor wrote.
 */
export async function appendAudit(
  m: EntityManager,
  link: { workspaceId: string; executionId: string; kind: AuditKind; refId: string; entry: unknown },
): Promise<AuditRef> {
  await lockExecution(m, link.executionId);
  return appendAuditLocked(m, link);
}

/**
 * `appendAudit` for a caller that holds the run's lock already (taken in an earlier statement). One
 * statement reads the head and writes the link after it, hashing in Postgres exactly as `chainHash`
 * does (sha256 of the previous hash and the entry's canonical JSON, UTF-8), which verification recomputes.
 */
export async function appendAuditLocked(
  m: EntityManager,
  link: { workspaceId: string; executionId: string; kind: AuditKind; refId: string; entry: unknown },
): Promise<AuditRef> {
  const written = await queryFirst<AuditRef>(
    m,
    `WITH head AS (SELECT seq, hash::text AS hash FROM run_audit WHERE execution_id = $1 ORDER BY seq DESC LIMIT 1),
     prev AS (SELECT coalesce((SELECT seq + 1 FROM head), 0) AS seq, coalesce((SELECT hash FROM head), $5) AS hash)
     INSERT INTO run_audit (workspace_id, execution_id, seq, kind, ref_id, prev_hash, hash)
     SELECT $2, $1, prev.seq, $3, $4, prev.hash, encode(sha256(convert_to(prev.hash || $6::text, 'UTF8')), 'hex')
     FROM prev
     RETURNING seq, hash::text AS hash`,
    [link.executionId, link.workspaceId, link.kind, link.refId, GENESIS_HASH, canonicalJson(link.entry)],
  );
  return written!;
}

export const auditOf = (m: EntityManager, executionId: string) =>
  audit(m).find({ where: { executionId }, order: { seq: 'ASC' } });
