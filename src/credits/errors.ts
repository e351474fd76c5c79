import { DomainError } from '../platform/errors';
import type { CreditKind } from '../rules/costs';

export interface InsufficientCreditsDetail {
  error: 'insufficient_credits';
  required: number;
  available: number;
  kind: CreditKind;
  /** Present when the account is locked: nothing can be charged whatever the balance. */
  locked?: true;
  /** A run refused at admission (issue 43 item 4): what its steps would cost, step by step. */
  estimate?: object;
}

/** 402 with the body of knowledge-graph-service-api.md §7 / interfaces.md; a locked account reports `available: 0`. */
export class InsufficientCreditsError extends DomainError {
  constructor(readonly shortfall: InsufficientCreditsDetail) {
    super('insufficient_credits', shortfall);
  }
}

/**
 * A refusal recorded where no one reads a 402 (a webhook delivery, a schedule's skipped fire): what the
 * run needs and what the balance has.
 */
export const insufficientCreditsReason = ({ shortfall }: InsufficientCreditsError): string =>
  shortfall.locked
    ? `insufficient_credits: the account is locked; the run’s priced steps cost ${shortfall.required} credits`
    : `insufficient_credits: the run’s priced steps cost ${shortfall.required} credits, the balance has ` +
      `${shortfall.available}`;
