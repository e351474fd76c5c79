import { Credential, CredentialDailyUsage } from '../../api-keys/entities';
import { CreditLedgerEntry } from '../../credits/entities';
import { MergeAction, MergeCandidate } from '../../merges/entities';
import { Membership, Tenant, User, Workspace } from '../../tenancy/entities';
import { RevokedToken } from '../auth/entities';
import { OutboxEvent } from '../outbox/entities';

/** Every TypeORM entity. Features add theirs here. */
export const entities = [
  Tenant,
  Workspace,
  User,
  Membership,
  Credential,
  CredentialDailyUsage,
  RevokedToken,
  MergeCandidate,
  MergeAction,
  CreditLedgerEntry,
  OutboxEvent,
];
