/**
 * `npm run bench -- run-control [--seconds 3] [--clients 4]`
 *
 * What issue 26's controls add to `POST /v1/runs` (the answer, 202; no worker runs, so the runs
 * stay where dispatch leaves them), each beside the anchor of a plain dispatch in the same run:
 * - tags (3 of them: one more UPDATE in the dispatch's transaction);
 * - a concurrency key with room (the key's advisory lock, the count of its active runs);
 * - a concurrency key at its limit, `enqueue` (held: the run is written, its workflow not started);
 * - and `GET /v1/runs?tag=` against `GET /v1/runs` over the same workspace.
 * Data goes into weft_bench; each run makes its own tenants.
 */

import { randomUUID } from 'node:crypto';
import { createApp } from '../src/app/http';
import { ensureSearchAttributes } from '../src/platform/temporal/connection';
import { markdownTable, measure, numberOption } from './lib/measure';
import { bootBenchService, serveLocally } from './lib/servers';

export async function run(args: string[]): Promise<void> {
  const seconds = numberOption(args, 'seconds', 3);
  const concurrency = numberOption(args, 'clients', 4);
  const service = await bootBenchService({ queue: 'weft-bench-run-control' });
  const { runtime, provisioning } = service;
  await ensureSearchAttributes(runtime.temporal);
  const tenant = await provisioning.bootstrap({ name: 'weft-bench-run-control' });
  const { server, url } = await serveLocally(createApp(runtime));

  const call = async (method: string, path: string, body?: unknown) => {
    const response = await fetch(`${url}${path}`, {
      method,
      headers: { authorization: `Bearer ${tenant.api_key}`, 'content-type': 'application/json' },
      ...(body ? { body: JSON.stringify(body) } : {}),
    });
    await response.text();
    if (response.status >= 300) throw new Error(`${method} ${path} answered ${response.status}`);
  };
  const steps = [{ tool: 'billing.credits_balance' }];
  const dispatch = (extra: Record<string, unknown>) => () =>
    call('POST', '/v1/runs', { agent: 'playbook', input: { steps }, ...extra });
  const options = { concurrency, durationMs: seconds * 1000 };

  // The held case: one run takes the key's only slot for good (no worker finishes it).
  await dispatch({ concurrency: { key: 'held', limit: 1, policy: 'enqueue' } })();

  const plain = await measure('dispatch, plain (anchor)', dispatch({}), options);
  const tagged = await measure('dispatch, 3 tags', dispatch({ tags: ['nightly', 'team:data', 'bench'] }), options);
  const keyed = await measure(
    'dispatch, concurrency key with room',
    () => dispatch({ concurrency: { key: `k-${randomUUID()}`, limit: 2, policy: 'enqueue' } })(),
    options,
  );
  const held = await measure(
    'dispatch, concurrency key full (held)',
    dispatch({ concurrency: { key: 'held', limit: 1, policy: 'enqueue' } }),
    options,
  );
  const list = await measure('GET /v1/runs?limit=50 (anchor)', () => call('GET', '/v1/runs?limit=50'), options);
  const listTagged = await measure(
    'GET /v1/runs?tag=nightly&limit=50',
    () => call('GET', '/v1/runs?tag=nightly&limit=50'),
    options,
  );

  console.log(`\n## Run controls, ${seconds} s per point, ${concurrency} clients\n`);
  console.log(
    markdownTable([
      { subject: plain },
      { subject: tagged, anchor: plain },
      { subject: keyed, anchor: plain },
      { subject: held, anchor: plain },
      { subject: list },
      { subject: listTagged, anchor: list },
    ]),
  );
  server.close();
  await service.stop();
}
