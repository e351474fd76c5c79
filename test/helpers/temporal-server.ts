import { freePort, startDevServer } from '../../src/platform/temporal/dev-server';

/**
 * Task queues the suite creates: a stack's `weft-test-…`, the durability test's worker process
 * (`weft-durability-…`) and the embedding failure test's (`embed-fail-…`). On a server the suite
 * shares (WEFT_TEST_TEMPORAL_ADDRESS) only these are the suite's; a test with a queue of its own
 * names it with one of these prefixes.
 */
export const SUITE_TASK_QUEUE_PREFIXES = ['weft-test-', 'weft-durability-', 'embed-fail-'] as const;

// The operator's connection settings, which must not follow the suite onto its own server.
const CONNECTION_VARIABLES = [
  'TEMPORAL_ADDRESS',
  'TEMPORAL_NAMESPACE',
  'TEMPORAL_TLS',
  'TEMPORAL_TLS_CA_PATH',
  'TEMPORAL_TLS_CERT_PATH',
  'TEMPORAL_TLS_KEY_PATH',
  'TEMPORAL_TLS_SERVER_NAME',
  'TEMPORAL_API_KEY',
];

export interface SuiteTemporal {
  address: string;
  namespace: string;
  /** True when the suite started this server itself (then everything on it is the suite's). */
  own: boolean;
}

/** TEMPORAL_ADDRESS as the suite found it (say, `npm start`'s server), before pointing it at its own. */
export const OPERATOR_TEMPORAL_ADDRESS = process.env.TEMPORAL_ADDRESS ?? '127.0.0.1:7233';

let started: Promise<{ suite: SuiteTemporal; stop(): Promise<void> }> | undefined;

async function start() {
  const shared = process.env.WEFT_TEST_TEMPORAL_ADDRESS;
  if (shared) {
    // An explicit opt-in: the namespace and TLS settings of the environment apply.
    process.env.TEMPORAL_ADDRESS = shared;
    const suite = { address: shared, namespace: process.env.TEMPORAL_NAMESPACE || 'default', own: false };
    return { suite, stop: async () => {} };
  }
  const address = `127.0.0.1:${await freePort()}`;
  const server = await startDevServer({ address });
  // Whatever the suite spawns (the durability test's worker process) inherits process.env: it must
  // reach this server and nothing of the operator's.
  for (const name of CONNECTION_VARIABLES) delete process.env[name];
  Object.assign(process.env, { TEMPORAL_ADDRESS: address, TEMPORAL_NAMESPACE: 'default' });
  return { suite: { address, namespace: 'default', own: true }, stop: () => server.stop() };
}

/**
 * The suite's Temporal server: always an in-memory `temporal server start-dev` on a free port that
 * it starts itself, whatever TEMPORAL_ADDRESS says, so `npm test` never touches the server of a
 * running `npm start` (or anyone's). WEFT_TEST_TEMPORAL_ADDRESS opts in to an existing server.
 */
export async function suiteTemporal(): Promise<SuiteTemporal> {
  started ??= start();
  return (await started).suite;
}

/** The suite's server if it was started (the end-of-suite check must not start one). */
export async function startedSuiteTemporal(): Promise<SuiteTemporal | undefined> {
  return (await started)?.suite;
}

export async function stopSuiteTemporal(): Promise<void> {
  const running = started;
  started = undefined;
  await (await running)?.stop();
}
