import { ConflictError } from '../platform/errors';

/**
 * A node of the pair was deleted or merged away before the decision: nothing is left to merge.
 * The caller supersedes the candidate (after the refused transaction rolled back) and answers 409.
 */
export class PairNotLiveError extends ConflictError {
  constructor() {
    super('A node of this pair is no longer live; the candidate is superseded');
  }
}
