import type { DataSource, EntityManager } from 'typeorm';
import { Credential } from '../api-keys/entities';
import { SCOPES } from '../platform/auth/scopes';
import type { JwtService } from '../platform/auth/tokens';
import { issueApiKeySecret } from '../platform/auth/tokens';
import { NotFoundError } from '../platform/errors';
import { CREDIT_GRANT_KIND } from '../rules/costs';
import { Membership, Tenant, User, Workspace } from './entities';
import { addToBalance, insertTenantLedgerRow } from './repository';

export interface BootstrapResult {
  tenant_id: string;
  workspace_id: string;
  user_id: string;
  api_key: string;
  user_jwt: string;
}

/**
 * Operator provisioning (the `weft` CLI and tests). It runs on the owner connection because it
 * creates tenants and workspaces, which no request can do; it never serves a request.
 */
export function createProvisioning(deps: { ownerDataSource: DataSource; jwt: JwtService }) {
  const { ownerDataSource, jwt } = deps;

  return {
    /** A tenant, a workspace, a user, a full-scope API key and a JWT; or, with `workspaceId`, a new member of it. */
    async bootstrap(input: { credits?: number; workspaceId?: string; name?: string }): Promise<BootstrapResult> {
      const label = input.name ?? 'bootstrap';
      const created = await ownerDataSource.transaction(async (m) => {
        let workspace: Workspace;
        if (input.workspaceId) {
          const existing = await m.getRepository(Workspace).findOneBy({ id: input.workspaceId });
          if (!existing) throw new NotFoundError(`Workspace ${input.workspaceId} not found`);
          workspace = existing;
          if (input.credits) await grant(m, workspace.tenantId, input.credits);
        } else {
          const tenant = await m
            .getRepository(Tenant)
            .save(m.getRepository(Tenant).create({ name: label, creditBalance: 0, locked: false }));
          if (input.credits) await grant(m, tenant.id, input.credits);
          workspace = await m
            .getRepository(Workspace)
            .save(m.getRepository(Workspace).create({ tenantId: tenant.id, name: label }));
        }
        const user = await m
          .getRepository(User)
          .save(m.getRepository(User).create({ displayName: label, email: null }));
        await m
          .getRepository(Membership)
          .insert({ workspaceId: workspace.id, userId: user.id, role: 'owner', isDefault: true });
        const secret = issueApiKeySecret();
        await m.getRepository(Credential).insert({
          workspaceId: workspace.id,
          userId: user.id,
          kind: 'api_key',
          name: `${label} key`,
          scopes: [...SCOPES],
          prefix: secret.prefix,
          keyHash: secret.hash,
          expiresAt: null,
          mintedByKind: 'provisioning',
          mintedById: null,
        });
        return { tenantId: workspace.tenantId, workspaceId: workspace.id, userId: user.id, apiKey: secret.token };
      });
      return {
        tenant_id: created.tenantId,
        workspace_id: created.workspaceId,
        user_id: created.userId,
        api_key: created.apiKey,
        user_jwt: await jwt.signUser(created.userId, created.workspaceId),
      };
    },

    async grantCredits(tenantId: string, amount: number): Promise<{ tenant_id: string; balance: number }> {
      return ownerDataSource.transaction(async (m) => {
        const exists = await m.getRepository(Tenant).existsBy({ id: tenantId });
        if (!exists) throw new NotFoundError(`Tenant ${tenantId} not found`);
        return { tenant_id: tenantId, balance: await grant(m, tenantId, amount) };
      });
    },
  };
}

export type Provisioning = ReturnType<typeof createProvisioning>;

/** A grant is a tenant-level ledger row (no workspace) plus the balance change, in one transaction. */
async function grant(m: EntityManager, tenantId: string, amount: number): Promise<number> {
  const balance = await addToBalance(m, tenantId, amount);
  if (balance === undefined) throw new NotFoundError(`Tenant ${tenantId} not found`);
  await insertTenantLedgerRow(m, tenantId, CREDIT_GRANT_KIND, amount);
  return balance;
}
