import type { EventuallyOptions } from './eventually';
import { eventually } from './eventually';
import type { as } from './http';

type Client = ReturnType<typeof as>;
type Wait = Omit<EventuallyOptions, 'what'>;

/** The statuses a run ends in. */
export const FINISHED = ['SUCCEEDED', 'FAILED', 'CANCELLED'];

/** Polls the run until `done` says so (30 s unless told); answers that read. */
export const runUntil = (client: Client, executionId: string, done: (run: any) => boolean, what: string, wait?: Wait) =>
  eventually(
    async () => {
      const read = await client.get(`/v1/runs/${executionId}`);
      return done(read.body) ? read.body : undefined;
    },
    { timeoutMs: 30_000, ...wait, what },
  );

/** The run once it is SUCCEEDED, FAILED or CANCELLED. */
export const finished = (client: Client, executionId: string, wait?: Wait) =>
  runUntil(client, executionId, (run) => FINISHED.includes(run.status), 'the run to finish', wait);

/** The run once it SUCCEEDED. */
export const succeeded = (client: Client, executionId: string, wait?: Wait) =>
  runUntil(client, executionId, (run) => run.status === 'SUCCEEDED', 'the run to succeed', wait);

/** The run's pending approval, once the run awaits it. */
export const pendingApproval = async (client: Client, executionId: string, wait?: Wait) => {
  const run = await runUntil(
    client,
    executionId,
    (body) => body.status === 'AWAITING_APPROVAL' && body.approvals.some((a: any) => a.status === 'pending'),
    'the run to await approval',
    wait,
  );
  return run.approvals.find((approval: any) => approval.status === 'pending');
};
