import type { Client } from '@temporalio/client';
import { Connection, Client as TemporalClient } from '@temporalio/client';
import { loadConfig } from '../../src/platform/config';
import { createPayloadCodec, dataConverter } from '../../src/platform/temporal/codec';
import { temporalConnectionOptions } from '../../src/platform/temporal/connection-options';
import { eventually, sleep } from './eventually';
import type { SuiteTemporal } from './temporal-server';
import { SUITE_TASK_QUEUE_PREFIXES } from './temporal-server';

const running = (taskQueue?: string) =>
  `ExecutionStatus = 'Running'${taskQueue ? ` AND TaskQueue = '${taskQueue.replaceAll("'", "''")}'` : ''}`;

/**
 * Terminates what still runs on a stack's task queue when the stack stops: the embedding queue
 * workflows, merges waiting for a reviewer. The stack started them, so the stack ends them.
 */
export async function terminateTaskQueue(client: Client, taskQueue: string): Promise<void> {
  await eventually(
    async () => {
      const open: string[] = [];
      for await (const execution of client.workflow.list({ query: running(taskQueue) }))
        open.push(execution.workflowId);
      for (const workflowId of open) {
        try {
          await client.workflow.getHandle(workflowId).terminate('test stack stopped');
        } catch {
          // Finished meanwhile: nothing left to end.
        }
      }
      // Visibility lags a little behind: done once a listing finds nothing running.
      return open.length === 0;
    },
    { what: `the workflows of ${taskQueue} to end`, timeoutMs: 30_000, intervalMs: 200 },
  );
}

const ours = (suite: SuiteTemporal, name: string) =>
  suite.own || SUITE_TASK_QUEUE_PREFIXES.some((prefix) => name.startsWith(prefix));

/** Schedules and running workflows of the suite still on its Temporal server. */
async function listLeftovers(client: Client, suite: SuiteTemporal): Promise<string[]> {
  const left: string[] = [];
  for await (const schedule of client.schedule.list()) {
    if (ours(suite, schedule.scheduleId)) left.push(`schedule ${schedule.scheduleId}`);
  }
  for await (const execution of client.workflow.list({ query: running() })) {
    if (ours(suite, execution.taskQueue)) {
      left.push(`running workflow ${execution.workflowId} (${execution.type} on ${execution.taskQueue})`);
    }
  }
  return left;
}

/**
 * The end-of-suite check: whatever a test started, it stopped or deleted. On the suite's own server
 * everything counts; on a shared one, whatever is on the suite's task queues.
 */
export async function assertNothingLeft(suite: SuiteTemporal): Promise<void> {
  const config = loadConfig({ ...process.env, TEMPORAL_ADDRESS: suite.address });
  const connection = await Connection.connect(temporalConnectionOptions(config));
  try {
    const client = new TemporalClient({
      connection,
      namespace: suite.namespace,
      dataConverter: dataConverter(createPayloadCodec(config)),
    });
    // Visibility lags a little behind the last terminations: look again for a few seconds.
    const deadline = Date.now() + 5_000;
    let left = await listLeftovers(client, suite);
    while (left.length > 0 && Date.now() < deadline) {
      await sleep(250);
      left = await listLeftovers(client, suite);
    }
    if (left.length > 0) {
      throw new Error(`The suite left these on its Temporal server (${suite.address}):\n  ${left.join('\n  ')}`);
    }
  } finally {
    await connection.close();
  }
}

/**
 * Before a suite on a shared server (the cluster tier): ends what an earlier, interrupted run of the suite left on
 * the suite's task queues, so that run's leftovers are not counted against this one.
 */
export async function clearEarlierLeftovers(suite: SuiteTemporal): Promise<string[]> {
  const config = loadConfig({ ...process.env, TEMPORAL_ADDRESS: suite.address });
  const connection = await Connection.connect(temporalConnectionOptions(config));
  try {
    const client = new TemporalClient({
      connection,
      namespace: suite.namespace,
      dataConverter: dataConverter(createPayloadCodec(config)),
    });
    const cleared: string[] = [];
    for await (const schedule of client.schedule.list()) {
      if (!ours(suite, schedule.scheduleId)) continue;
      await client.schedule.getHandle(schedule.scheduleId).delete();
      cleared.push(schedule.scheduleId);
    }
    for await (const execution of client.workflow.list({ query: running() })) {
      if (!ours(suite, execution.taskQueue)) continue;
      await client.workflow.getHandle(execution.workflowId, execution.runId).terminate('an earlier run left it');
      cleared.push(execution.workflowId);
    }
    return cleared;
  } finally {
    await connection.close();
  }
}
