import { z } from 'zod';
import type { CreditKind } from '../rules/costs';
import { CREDIT_KINDS } from '../rules/costs';

// `POST /v1/runs?dry_run=true` (issue 43 item 4): the dispatch's checks and the run's estimate, nothing written.

export const DispatchQuery = z.object({
  dry_run: z
    .enum(['true', 'false'])
    .default('false')
    .transform((value) => value === 'true')
    .describe('`true`: check the body and answer 200 with the estimate against the balance; nothing is dispatched.'),
});

export const RunEstimateResponse = z
  .object({
    estimate: z.object({
      credits: z.number().int().describe('What the playbook’s steps cost together at their tools’ prices now.'),
      steps: z.array(
        z.object({
          step_no: z.number().int(),
          tool: z.string(),
          credits: z.number().int(),
          credit_kind: z.enum(CREDIT_KINDS as [CreditKind, ...CreditKind[]]).nullable(),
        }),
      ),
      complete: z
        .boolean()
        .describe('false for an llm run (the model chooses its calls) or one whose steps start child runs.'),
    }),
    balance: z.number().int().describe('The tenant’s balance now (0 when the account is locked).'),
    locked: z.boolean(),
    affordable: z.boolean().describe('Whether a dispatch now would be admitted: the balance pays the estimate.'),
  })
  .meta({ id: 'RunEstimate' });
