import type { ChildProcess } from 'node:child_process';
import { fork } from 'node:child_process';
import { once } from 'node:events';
import path from 'node:path';
import type { Client } from '@temporalio/client';
import { WorkflowNotFoundError } from '@temporalio/client';
import type { RunWorkflowResult } from '../../src/runs/workflow';
import { runWorkflowId } from '../../src/runs/workflow';
import type { WorkerMemory } from './worker-process';

// The benchmarks' worker process and a run's end, for every benchmark that runs runs.

const sleep = (ms: number) => new Promise<void>((resolve) => setTimeout(resolve, ms));

/** The worker process: started, asked for its memory, stopped. */
export async function forkWorker(env: NodeJS.ProcessEnv) {
  const child: ChildProcess = fork(path.join(__dirname, 'worker-process.ts'), [], {
    env,
    // `node --cpu-prof --cpu-prof-dir=… --import tsx bench/main.ts runs` profiles the worker too.
    execArgv: ['--import', 'tsx', '--expose-gc', ...process.execArgv.filter((arg) => arg.startsWith('--cpu-prof'))],
  });
  const next = async <T>(key: string): Promise<T> => {
    for (;;) {
      const [message] = (await once(child, 'message')) as [Record<string, unknown>];
      if (key in message) return message[key] as T;
    }
  };
  await next('ready');
  return {
    async memory(): Promise<WorkerMemory> {
      const answer = next<WorkerMemory>('memory');
      child.send('memory');
      return answer;
    },
    async stop() {
      const exited = once(child, 'exit');
      child.send('stop');
      await exited;
    },
  };
}

/** The run's workflow result, once the outbox relay has started it. */
export async function runResult(client: Client, executionId: string): Promise<RunWorkflowResult> {
  const handle = client.workflow.getHandle(runWorkflowId(executionId));
  for (;;) {
    try {
      return (await handle.result()) as RunWorkflowResult;
    } catch (error) {
      if (!(error instanceof WorkflowNotFoundError)) throw error;
      await sleep(2);
    }
  }
}
