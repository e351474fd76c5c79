import { z } from 'zod';
import { readCreditBalanceNow } from '../../credits/repository';
import { scopeOf } from '../../platform/auth/principal';
import type { ScopedRead } from '../../platform/db/unit-of-work';
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
      const { balance, locked } = await readCreditBalanceNow(deps.read, scopeOf(principal), principal.tenantId);
      return { balance, locked };
    },
  }),
];
