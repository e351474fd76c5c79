import { Credential, CredentialDailyUsage } from '../../api-keys/entities';
import { PromptRun, PromptWrite } from '../../prompt/entities';
import { Membership, Tenant, User, Workspace } from '../../tenancy/entities';

/** Every TypeORM entity. Features add theirs here. */
export const entities = [Tenant, Workspace, User, Membership, Credential, CredentialDailyUsage, PromptRun, PromptWrite];
