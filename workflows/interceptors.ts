import type { WorkflowInterceptorsFactory } from '@temporalio/workflow';
import { ApplicationFailure, log } from '@temporalio/workflow';
import { REFUSED_PAYLOAD_FAILURE, refusedPayloadReason } from '../src/platform/temporal/refused-payload';

const refusal = (args: readonly unknown[]) => args.map(refusedPayloadReason).find((reason) => reason !== undefined);

/**
 * The worker's codec decodes a payload it refuses (plaintext JSON from `temporal workflow start`,
 * another workspace's ciphertext) to a placeholder; this interceptor keeps it from workflow code. An
 * input ends the workflow at once (non-retryable, nothing written); a signal is dropped; a query or
 * update is refused. Legitimate payloads never decode to the placeholder, so histories replay as before.
 */
export const interceptors: WorkflowInterceptorsFactory = () => ({
  inbound: [
    {
      async execute(input, next) {
        const reason = refusal(input.args);
        if (reason) throw ApplicationFailure.nonRetryable(`Workflow input refused: ${reason}`, REFUSED_PAYLOAD_FAILURE);
        return next(input);
      },
      async handleSignal(input, next) {
        const reason = refusal(input.args);
        if (reason) {
          log.warn('Signal refused', { signal: input.signalName, reason });
          return;
        }
        return next(input);
      },
      validateUpdate(input, next) {
        const reason = refusal(input.args);
        if (reason) throw ApplicationFailure.nonRetryable(`Update refused: ${reason}`, REFUSED_PAYLOAD_FAILURE);
        return next(input);
      },
      async handleUpdate(input, next) {
        const reason = refusal(input.args);
        if (reason) throw ApplicationFailure.nonRetryable(`Update refused: ${reason}`, REFUSED_PAYLOAD_FAILURE);
        return next(input);
      },
      async handleQuery(input, next) {
        const reason = refusal(input.args);
        if (reason) throw ApplicationFailure.nonRetryable(`Query refused: ${reason}`, REFUSED_PAYLOAD_FAILURE);
        return next(input);
      },
    },
  ],
});
