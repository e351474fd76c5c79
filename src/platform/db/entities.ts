import { AgentClaim, AgentFailureCluster, AgentSession } from '../../agents/entities';
import { Credential, CredentialDailyUsage } from '../../api-keys/entities';
import { CapabilityIdempotencyKey } from '../../capabilities/entities';
import { Membership, Tenant, User, Workspace } from '../../tenancy/entities';

/** Every TypeORM entity. Features add theirs here. */
export const entities = [
  Tenant,
  Workspace,
  User,
  Membership,
  Credential,
  CredentialDailyUsage,
  CapabilityIdempotencyKey,
  AgentSession,
  AgentClaim,
  AgentFailureCluster,
];
