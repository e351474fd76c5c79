import { z } from 'zod';
import { scopeOf } from '../../platform/auth/principal';
import type { ScopedRead } from '../../platform/db/unit-of-work';
import { NotFoundError } from '../../platform/errors';
import { defineCapability } from '../define';

export const billingCapabilities = (deps: { read: ScopedRead }) => [
  defineCapability({
    name: 'billing.credits_balance',
    access: 'read',
    description: 'The caller’s tenant credit balance, and whether the account is locked',
    input: z.strictObject({}),
    example: {},
    output: z.object({
      balance: z.number().int(),
      locked: z.boolean().describe('A locked account can be charged nothing, whatever its balance.'),
    }),
    // One scoped read, no transaction: a run's step of this tool is one statement (issue 27).
    handler: async ({ principal }) => {
      const [tenant] = await deps.read<{ balance: number; locked: boolean }>(
        scopeOf(principal),
        `SELECT credit_balance AS balance, locked FROM tenants WHERE id = $1::uuid`,
        [principal.tenantId],
      );
      if (!tenant) throw new NotFoundError('Tenant not found');
      return { balance: Number(tenant.balance), locked: tenant.locked };
    },
  }),
];
