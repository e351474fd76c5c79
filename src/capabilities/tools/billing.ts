import { z } from 'zod';
import { readCreditBalance } from '../../credits/repository';
import { scopeOf } from '../../platform/auth/principal';
import type { UnitOfWork } from '../../platform/db/unit-of-work';
import { defineCapability } from '../define';

export const billingCapabilities = (deps: { uow: UnitOfWork }) => [
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
    handler: async ({ principal }) => {
      const { balance, locked } = await deps.uow(scopeOf(principal), (m) => readCreditBalance(m, principal.tenantId));
      return { balance, locked };
    },
  }),
];
