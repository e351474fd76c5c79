import { AgentClaim, AgentFailureCluster, AgentSession } from '../../agents/entities';
import { Credential, CredentialDailyUsage } from '../../api-keys/entities';
import { CapabilityIdempotencyKey } from '../../capabilities/entities';
import { CodeSymbol } from '../../code/entities';
import { CreditLedgerEntry } from '../../credits/entities';
import { Edge, Node } from '../../graph/entities';
import { MergeAction, MergeCandidate } from '../../merges/entities';
import { WorkspaceSettings } from '../../ontology-config/entities';
import { PromptRun, PromptWrite } from '../../prompt/entities';
import { RunApproval, RunAuditLink, RunExecution, RunStep } from '../../runs/entities';
import { Membership, Tenant, User, Workspace } from '../../tenancy/entities';
import { WebhookDelivery, WebhookTrigger } from '../../triggers/entities';
import { TypeCatalogEntry, WorkspaceEvent } from '../../type-catalog/entities';
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
  Node,
  Edge,
  TypeCatalogEntry,
  WorkspaceEvent,
  WorkspaceSettings,
  PromptRun,
  PromptWrite,
  CapabilityIdempotencyKey,
  AgentSession,
  AgentClaim,
  AgentFailureCluster,
  CodeSymbol,
  RunExecution,
  RunStep,
  RunApproval,
  RunAuditLink,
  WebhookTrigger,
  WebhookDelivery,
];
