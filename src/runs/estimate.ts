import type { EntityManager } from 'typeorm';
import type { AnyCapability } from '../capabilities/define';
import { costOf, creditKindOf } from '../capabilities/service';
import { InsufficientCreditsError } from '../credits/errors';
import { readCreditBalance } from '../credits/repository';
import type { CreditKind } from '../rules/costs';
import type { RunTemplate } from './schemas';

// Credits at admission (issue 43 item 4): what a run's priced steps will cost, known before it starts,
// so a run the balance cannot pay is refused at dispatch instead of failing halfway.

export interface RunEstimate {
  /** What the playbook's steps cost together, at their tools' prices now. */
  credits: number;
  steps: { step_no: number; tool: string; credits: number; credit_kind: CreditKind | null }[];
  /**
   * Whether the sum is the run's whole cost: false for an llm run (the model chooses its calls) and for a
   * playbook whose steps start other runs (a child's steps are its own).
   */
  complete: boolean;
}

/** The estimate of a checked template (its tools known: `validate` ran first). */
export function estimateRun(body: RunTemplate, known: ReadonlyMap<string, AnyCapability>): RunEstimate {
  const planned = body.agent === 'playbook' ? body.input.steps : [];
  const steps = planned.map((step, stepNo) => {
    const tool = known.get(step.tool)!;
    return { step_no: stepNo, tool: step.tool, credits: costOf(tool), credit_kind: creditKindOf(tool) };
  });
  return {
    credits: steps.reduce((sum, step) => sum + step.credits, 0),
    steps,
    complete: body.agent === 'playbook' && !planned.some((step) => step.tool === 'runs.dispatch'),
  };
}

/** The estimate beside the tenant's balance, for `POST /v1/runs?dry_run=true`. */
export async function estimateAgainstBalance(m: EntityManager, tenantId: string, estimate: RunEstimate) {
  const { balance, locked } = await readCreditBalance(m, tenantId);
  const available = locked ? 0 : balance;
  return { estimate, balance: available, locked, affordable: !locked && estimate.credits <= balance };
}

/**
 * 402 when the balance cannot pay the estimate (or the account is locked and something is priced), naming
 * the kind of the first step the balance would not reach; nothing is written.
 */
export async function refuseUnaffordable(m: EntityManager, tenantId: string, estimate: RunEstimate): Promise<void> {
  if (estimate.credits === 0) return;
  const { balance, locked } = await readCreditBalance(m, tenantId);
  if (!locked && estimate.credits <= balance) return;
  let spent = 0;
  const unpaid =
    estimate.steps.find((step) => {
      spent += step.credits;
      return step.credits > 0 && (locked || spent > balance);
    }) ?? estimate.steps.find((step) => step.credits > 0)!;
  throw new InsufficientCreditsError({
    error: 'insufficient_credits',
    required: estimate.credits,
    available: locked ? 0 : balance,
    kind: unpaid.credit_kind!,
    ...(locked ? { locked: true as const } : {}),
    estimate,
  });
}
