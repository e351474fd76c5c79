import autocannon from 'autocannon';

/**
 * The load generator's process (bench/lib/external-load.ts): autocannon, asked over IPC for one run at a
 * time. Each run cycles through the requests it was given (one per node id, say), and counts an answer
 * whose body `failedWhen` finds (an MCP tool result with `isError`) beside non-2xx answers.
 */
export interface LoadRun {
  url: string;
  connections: number;
  seconds: number;
  headers: Record<string, string>;
  requests: { method: 'GET' | 'POST'; path: string; body?: string }[];
  /** A substring of a 2xx body that still counts as a failure. */
  failedWhen?: string;
}

export interface LoadResult {
  count: number;
  rps: number;
  p50: number;
  p97_5: number;
  p99: number;
  failures: number;
  seconds: number;
}

async function loadRun(run: LoadRun): Promise<LoadResult> {
  let next = 0;
  let failed = 0;
  const result = await autocannon({
    url: run.url,
    connections: run.connections,
    duration: run.seconds,
    headers: run.headers,
    requests: [
      {
        setupRequest: (request) => ({ ...request, ...run.requests[next++ % run.requests.length] }),
        onResponse: (status: number, body: string) => {
          if (status < 300 && run.failedWhen && body.includes(run.failedWhen)) failed += 1;
        },
      },
    ],
  });
  return {
    count: result.requests.total,
    rps: result.requests.total / result.duration,
    p50: result.latency.p50,
    p97_5: result.latency.p97_5,
    p99: result.latency.p99,
    failures: failed + result.non2xx + result.errors + result.timeouts,
    seconds: result.duration,
  };
}

process.on('message', (message: { run?: LoadRun; stop?: true }) => {
  if (message.stop) process.exit(0);
  if (message.run) {
    loadRun(message.run).then(
      (result) => process.send?.({ result }),
      (error: Error) => process.send?.({ error: error.message }),
    );
  }
});
process.send?.({ ready: true });
