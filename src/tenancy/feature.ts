import { Membership, Tenant, User, Workspace } from './entities';

/** Tenants, workspaces, users and memberships. */
export const tenancyFeature = {
  name: 'tenancy',
  entities: [Tenant, Workspace, User, Membership],
};
