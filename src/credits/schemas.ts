import { z } from 'zod';
import { LIMITS } from '../rules/limits';

export const LedgerQuery = z.object({
  limit: z.coerce.number().int().min(1).max(LIMITS.ledger.list.max).default(LIMITS.ledger.list.default),
  cursor: z.string().max(200).optional().describe('`next_cursor` of the previous page.'),
});
export type LedgerQuery = z.output<typeof LedgerQuery>;

export const LedgerEntry = z
  .object({
    ledger_id: z.uuid(),
    kind: z.string().describe('A credit kind (`ontology.search.hybrid` …); a refund has its reservation’s kind.'),
    amount: z.number().int().describe('Negative: a charge (reservation). Positive: a refund.'),
    settlement: z
      .enum(['pending', 'confirmed', 'refunded'])
      .nullable()
      .describe('How a charge made before its work ended; null for rows that take no part (refunds, prompts).'),
    refund_of: z.uuid().nullable().describe('A refund: the charge it gives back.'),
    created_at: z.iso.datetime({ offset: true }),
  })
  .meta({ id: 'LedgerEntry' });

export const LedgerPage = z
  .object({
    balance: z.number().int().describe('The tenant’s balance now.'),
    locked: z.boolean().describe('A locked account can be charged nothing, whatever its balance.'),
    entries: z.array(LedgerEntry),
    next_cursor: z.string().nullable().describe('Pass as `cursor` for the next (older) page; null on the last.'),
  })
  .meta({ id: 'LedgerPage' });
export type LedgerPage = z.input<typeof LedgerPage>;
