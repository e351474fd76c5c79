import type { Client } from '@temporalio/client';
import { FaultHttp } from './fault-runs';
import type { FaultStack } from './fault-stack';
import { startFaultStack } from './fault-stack';
import { getStack } from './stack';
import type { FileTemporal } from './weft-process';
import { fileTemporal } from './weft-process';

/**
 * A fault stack (API and `workers` worker processes behind the fault proxies) on the suite's own
 * database and Temporal server, started before a describe block's tests and stopped after them.
 */
export function faultStackForSuite(workers = 1): { readonly stack: FaultStack; readonly http: FaultHttp } {
  return suiteStack(workers);
}

/**
 * The same on a Temporal dev server of its own that keeps its state in a file (`temporal`), so a test
 * can SIGKILL the server itself and start it again on the same address and file.
 */
export function faultStackOnFileTemporal(): {
  readonly stack: FaultStack;
  readonly http: FaultHttp;
  readonly temporal: FileTemporal;
} {
  let temporal: FileTemporal | undefined;
  const fault = suiteStack(1, async () => {
    temporal = await fileTemporal();
    await temporal.start();
    const own = temporal;
    return { address: own.address, client: () => own.client() };
  });
  after(async () => {
    await temporal?.remove();
  });
  return {
    get stack() {
      return fault.stack;
    },
    get http() {
      return fault.http;
    },
    get temporal() {
      if (!temporal) throw new Error('the file Temporal starts in before()');
      return temporal;
    },
  };
}

function suiteStack(
  workers: number,
  ownTemporal?: () => Promise<{ address: string; client: () => Promise<Client> }>,
): { readonly stack: FaultStack; readonly http: FaultHttp } {
  let stack: FaultStack | undefined;
  let http: FaultHttp | undefined;
  before(async () => {
    const suite = getStack();
    const temporal = ownTemporal
      ? await ownTemporal()
      : { address: suite.config.TEMPORAL_ADDRESS, client: suite.runtime.temporal.client };
    stack = await startFaultStack({
      databaseUrl: suite.config.DATABASE_URL,
      databaseOwnerUrl: suite.config.DATABASE_OWNER_URL,
      temporalAddress: temporal.address,
      temporalClient: temporal.client,
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
