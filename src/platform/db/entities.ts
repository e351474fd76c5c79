import { Credential, CredentialDailyUsage } from '../../api-keys/entities';
import { Edge, Node } from '../../graph/entities';
import { WorkspaceSettings } from '../../ontology-config/entities';
import { Membership, Tenant, User, Workspace } from '../../tenancy/entities';
import { TypeCatalogEntry, WorkspaceEvent } from '../../type-catalog/entities';

/** Every TypeORM entity. Features add theirs here. */
export const entities = [
  Tenant,
  Workspace,
  User,
  Membership,
  Credential,
  CredentialDailyUsage,
  Node,
  Edge,
  TypeCatalogEntry,
  WorkspaceEvent,
  WorkspaceSettings,
];
