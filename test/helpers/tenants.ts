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

/**
 * A tenant's balance leaving out embedding charges (and their refunds), read in one statement: new
 * nodes are embedded and charged asynchronously, a batch per workspace after a short window, so a
 * test of another operation's price would otherwise race with them.
 */
export const balanceBesidesEmbeddings = async (tenantId: string): Promise<number> =>
  Number(
    (
      await getStack().ownerDataSource.query(
        `SELECT t.credit_balance - COALESCE(
           (SELECT sum(amount) FROM credit_ledger WHERE tenant_id = t.id AND kind = 'worker.embed_node'), 0
         ) AS balance
         FROM tenants t WHERE t.id = $1`,
        [tenantId],
      )
    )[0].balance,
  );
