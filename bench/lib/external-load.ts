import type { ChildProcess } from 'node:child_process';
import { fork } from 'node:child_process';
import { once } from 'node:events';
import path from 'node:path';
import type { CpuGroups } from './cpu';
import type { LoadResult, LoadRun } from './load-process';
import type { Measurement } from './measure';
import { alternatePhases, cpuPerRequest } from './measure';

/**
 * A load generator in a process of its own (autocannon, bench/lib/load-process.ts), as a service's
 * throughput is measured: the server's thread then spends nothing on the client, whose cost differs
 * by request (a POST body costs a client more than a GET) and would otherwise count as the server's.
 */
export async function externalLoad() {
  const child: ChildProcess = fork(path.join(__dirname, 'load-process.ts'), [], { execArgv: ['--import', 'tsx'] });
  const next = async <T>(key: string): Promise<T> => {
    for (;;) {
      const [message] = (await once(child, 'message')) as [Record<string, unknown>];
      if ('error' in message) throw new Error(`load generator: ${String(message.error)}`);
      if (key in message) return message[key] as T;
    }
  };
  await next('ready');
  const send = (run: LoadRun) => {
    const answer = next<LoadResult>('result');
    child.send({ run });
    return answer;
  };

  return {
    pid: child.pid!,
    /** One run of `run.seconds` at `run.connections`. */
    load: send,
    /**
     * Subject against anchor at one number of connections, fair to both as `measureAlternating` is: each
     * warmed for `warmupSeconds`, then four alternating phases (subject, anchor, anchor, subject) of a
     * quarter of `seconds` each, pooled per side; with `cpu`, each side's CPU per request of those groups.
     * A failed answer (non-2xx, or a body with `failedWhen`) throws: a figure of errors is no figure.
     */
    async alternate(
      subject: { name: string; run: Omit<LoadRun, 'connections' | 'seconds'> },
      anchor: { name: string; run: Omit<LoadRun, 'connections' | 'seconds'> },
      options: { connections: number; seconds: number; warmupSeconds?: number; cpu?: CpuGroups },
    ): Promise<{ subject: Measurement; anchor: Measurement }> {
      const { connections, seconds, warmupSeconds = 1, cpu } = options;
      for (const side of [subject, anchor]) await send({ ...side.run, connections, seconds: warmupSeconds });
      const pooled = await alternatePhases(
        subject,
        anchor,
        async (side) => {
          const phase = await send({ ...side.run, connections, seconds: seconds / 4 });
          if (phase.failures > 0) throw new Error(`${side.name}: ${phase.failures} failed answers`);
          return phase;
        },
        cpu,
      );
      const of = (side: typeof subject): Measurement => {
        const { phases, cpuSeconds } = pooled.get(side)!;
        const count = phases.reduce((sum, phase) => sum + phase.count, 0);
        const mean = (pick: (phase: LoadResult) => number) =>
          phases.reduce((sum, phase) => sum + pick(phase) * phase.count, 0) / count;
        return {
          name: side.name,
          concurrency: connections,
          count,
          rps: count / phases.reduce((sum, phase) => sum + phase.seconds, 0),
          // autocannon reports percentiles per run: the phases' are weighted by their requests.
          p50: mean((phase) => phase.p50),
          p95: mean((phase) => phase.p97_5),
          p99: mean((phase) => phase.p99),
          ...(cpu ? { cpuMsPerRequest: cpuPerRequest(cpuSeconds, count) } : {}),
        };
      };
      return { subject: of(subject), anchor: of(anchor) };
    },
    async stop() {
      const exited = once(child, 'exit');
      child.send({ stop: true });
      await exited;
    },
  };
}
