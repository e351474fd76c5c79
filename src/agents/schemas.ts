import { z } from 'zod';
import { LIMITS } from '../rules/limits';

const { agents } = LIMITS;
const timestamp = z.iso.datetime({ offset: true });
const id = z.uuid();

// ---- sessions ----

export const StartSessionInput = z.strictObject({
  name: z.string().trim().min(1).max(agents.nameChars).optional(),
  metadata: z
    .record(z.string(), z.unknown())
    .refine((value) => JSON.stringify(value).length <= agents.metadataBytes, {
      message: `metadata is larger than ${agents.metadataBytes} bytes of JSON`,
    })
    .optional(),
});

export const SessionStatus = z.enum(['active', 'ended', 'expired']);

export const StartSessionOutput = z.object({
  session_id: id,
  status: z.literal('active'),
  started_at: timestamp,
  heartbeat_ttl_seconds: z
    .number()
    .int()
    .describe('Heartbeat at least this often, or the sweeper expires the session.'),
});

export const SessionRef = z.strictObject({ session_id: id });

export const HeartbeatOutput = z.object({
  session_id: id,
  status: SessionStatus,
  already_inactive: z.boolean().describe('True when the session is no longer active: stop heartbeating.'),
  last_heartbeat_at: timestamp,
});

export const Outcome = z.enum(['succeeded', 'failed', 'cancelled']);

export const EndSessionInput = z.strictObject({
  session_id: id,
  outcome: Outcome,
  error_signature: z
    .string()
    .trim()
    .min(1)
    .max(agents.errorSignatureChars)
    .optional()
    .describe('With outcome failed: the error, which joins a failure cluster once normalised.'),
});

export const EndSessionOutput = z.object({
  session_id: id,
  status: SessionStatus,
  outcome: Outcome.nullable(),
  abandoned_claims: z.number().int().describe('Active claims this call abandoned (0 when the session had ended).'),
});

// ---- claims ----

export const ClaimWorkInput = z.strictObject({
  session_id: id,
  target_node_id: id,
  intent: z.string().trim().min(1).max(agents.intentChars),
});

export const ClaimWorkOutput = z.object({
  claim_id: id,
  session_id: id,
  target_node_id: id,
  intent: z.string(),
  status: z.literal('active'),
});

export const ReleaseClaimInput = z.strictObject({ claim_id: id });

export const ReleaseClaimOutput = z.object({
  claim_id: id,
  status: z.enum(['released', 'abandoned']),
});

export const ListActiveClaimsInput = z.strictObject({
  session_id: id.optional(),
  target_node_id: id.optional(),
});

export const ClaimRow = z.object({
  claim_id: id,
  session_id: id,
  user_id: id,
  target_node_id: id,
  intent: z.string(),
  status: z.enum(['active', 'released', 'abandoned']),
  created_at: timestamp,
  updated_at: timestamp,
});
export type ClaimRow = z.input<typeof ClaimRow>;

export const ListActiveClaimsOutput = z.object({
  claims: z.array(ClaimRow),
  truncated: z.boolean().describe(`True when an unscoped list stopped at ${LIMITS.unscopedCapabilityRows} rows.`),
});

// ---- findings ----

export const Severity = z.enum(['info', 'low', 'medium', 'high', 'critical']);

export const RecordFindingInput = z.strictObject({
  target_node_id: id.describe('A live node whose type starts with code.'),
  severity: Severity,
  kind: z.string().trim().min(1).max(agents.finding.kindChars).describe('For example bug, dead_code, complexity.'),
  title: z.string().trim().min(1).max(agents.finding.titleChars),
  detail: z.string().max(agents.finding.detailChars).optional(),
  session_id: id.optional().describe('The session that found it, when there is one.'),
});

export const RecordFindingOutput = z.object({
  finding_id: id.nullable().describe('null when the write was staged: the finding exists once its change-set applies.'),
  target_node_id: id,
  change_set_id: id
    .optional()
    .describe('Present when the workspace stages agents’ writes (`staging.agent_writes`): the change-set to review.'),
});

export const GetFindingsInput = z.strictObject({
  target_node_id: id.optional(),
  severity: Severity.optional(),
});

export const FindingRow = z.object({
  finding_id: id,
  target_node_id: id,
  severity: Severity,
  kind: z.string(),
  title: z.string(),
  detail: z.string().nullable(),
  session_id: id.nullable(),
  created_at: timestamp,
});
export type FindingRow = z.input<typeof FindingRow>;

export const GetFindingsOutput = z.object({
  findings: z.array(FindingRow),
  truncated: z.boolean().describe(`True when an unscoped list stopped at ${LIMITS.unscopedCapabilityRows} rows.`),
});

// ---- failure clusters ----

export const FailureClustersInput = z.strictObject({
  limit: z.number().int().min(1).max(agents.clusters.max).default(agents.clusters.default),
});

export const FailureCluster = z.object({
  cluster_id: id,
  signature: z.string().describe('The normalised signature: digits, ids, strings and paths masked.'),
  count: z.number().int(),
  first_seen: timestamp,
  last_seen: timestamp,
  recent_session_ids: z.array(id).describe(`The last ${agents.clusters.recentSessions} sessions, newest first.`),
});
export type FailureCluster = z.input<typeof FailureCluster>;

export const FailureClustersOutput = z.object({ clusters: z.array(FailureCluster) });
