import { startReceiver } from './callback-receiver';
import type { Stack } from './stack';
import { bootStack } from './stack';

/**
 * A suite's own stack whose callbacks may reach a loopback receiver (RUN_CALLBACK_ALLOW_PRIVATE) and
 * retry fast, with that receiver: booted before the suite's tests, stopped after them. The suite's
 * main stack keeps production's refusal of private addresses.
 */
export function useCallbackStack() {
  let variant: { stack: Stack; stop: () => Promise<void> } | undefined;
  let receiver: Awaited<ReturnType<typeof startReceiver>> | undefined;
  before(async () => {
    variant = await bootStack({
      RUN_CALLBACK_ALLOW_PRIVATE: 'true',
      RUN_CALLBACK_RETRY_BASE_SECONDS: '0.2',
      RUN_CALLBACK_RETRY_MAX_SECONDS: '1',
    });
    receiver = await startReceiver();
  });
  after(async () => {
    await receiver?.stop();
    await variant?.stop();
  });
  return {
    get stack(): Stack {
      return variant!.stack;
    },
    get receiver() {
      return receiver!;
    },
  };
}
