import type { BootstrapResult } from '../../src/tenancy/service';
import { getStack } from './stack';

/** A fresh tenant, workspace, user, full-scope key and JWT, as `weft bootstrap` makes them. */
export const newTenant = (credits = 0): Promise<BootstrapResult> => getStack().provisioning.bootstrap({ credits });

/** Another user in an existing workspace, with their own key and JWT. */
export const newMember = (workspaceId: string): Promise<BootstrapResult> =>
  getStack().provisioning.bootstrap({ workspaceId });

/** A tenant's balance, read past RLS through the owner connection. */
export const creditBalance = async (tenantId: string): Promise<number> =>
  Number(
    (await getStack().ownerDataSource.query(`SELECT credit_balance FROM tenants WHERE id = $1`, [tenantId]))[0]
      .credit_balance,
  );
