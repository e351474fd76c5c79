import { continueAsNew, proxyActivities, sleep } from '@temporalio/workflow';
import type { Activities } from '../activities';
import type { RunFlowInput } from '../src/runs/flow-workflow';
import { databaseActivity } from './activity-options';

const { releaseFlowHeld } = proxyActivities<Activities>(databaseActivity);

/** Rounds before the timer continues as new: a debounce pushed out many times keeps a short history. */
const ROUNDS_PER_RUN = 100;

/**
 * A held run's timer (issue 43 item 2): asks the database how long until the run's start, sleeps that
 * long, and asks again; the activity releases the key's due runs itself. Ends once the run is no longer
 * held (started, cancelled). The row is the truth, so a lost timer costs only a later start.
 */
export async function runFlowWorkflow(input: RunFlowInput): Promise<void> {
  for (let round = 0; round < ROUNDS_PER_RUN; round++) {
    const { waitMs } = await releaseFlowHeld(input);
    if (waitMs === null) return;
    await sleep(waitMs);
  }
  await continueAsNew<typeof runFlowWorkflow>(input);
}
