import { defineRoute } from '../platform/api/route';
import { LIMITS } from '../rules/limits';
import { LedgerPage, LedgerQuery } from './schemas';
import type { CreditService } from './service';

export const creditRoutes = (credits: CreditService) => [
  defineRoute({
    method: 'get',
    path: '/v1/billing/ledger',
    operationId: 'listLedger',
    summary: 'The tenant’s balance and the workspace’s credit ledger, newest first, cursor-paged',
    description:
      'Read-only. Every charge (a negative row) and refund (a positive row linked by `refund_of`) made in the ' +
      'workspace, newest first, with the tenant’s current balance. An operator’s grant is tenant-level, not a ' +
      `row of any workspace, so it shows in \`balance\` only. \`limit\` up to ${LIMITS.ledger.list.max} ` +
      `(default ${LIMITS.ledger.list.default}); pass \`next_cursor\` as \`cursor\` for older rows.`,
    tags: ['billing'],
    scope: 'billing:read',
    query: LedgerQuery,
    response: LedgerPage,
    handler: ({ auth, query }) => credits.ledger(auth, query),
  }),
];
