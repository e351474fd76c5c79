import { FaultHttp } from './fault-runs';
import type { FaultStack } from './fault-stack';
import { startFaultStack } from './fault-stack';
import { getStack } from './stack';

/**
 * A fault stack (API and `workers` worker processes behind the fault proxies) on the suite's own
 * database and Temporal server, started before a describe block's tests and stopped after them.
 */
export function faultStackForSuite(workers = 1): { readonly stack: FaultStack; readonly http: FaultHttp } {
  let stack: FaultStack | undefined;
  let http: FaultHttp | undefined;
  before(async () => {
    const suite = getStack();
    stack = await startFaultStack({
      databaseUrl: suite.config.DATABASE_URL,
      databaseOwnerUrl: suite.config.DATABASE_OWNER_URL,
      temporalAddress: suite.config.TEMPORAL_ADDRESS,
      temporalClient: suite.runtime.temporal.client,
      workers,
    });
    http = new FaultHttp(stack.api.baseUrl);
  });
  after(async () => {
    await stack?.stop();
  });
  return {
    get stack() {
      if (!stack) throw new Error('the fault stack starts in before()');
      return stack;
    },
    get http() {
      if (!http) throw new Error('the fault stack starts in before()');
      return http;
    },
  };
}
