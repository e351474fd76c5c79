/**
 * `npm run bench -- run-callbacks [--runs 300]`
 *
 * Issue 26 part 2. Two paths, each beside an anchor measured in the same run:
 *
 * 1. Finishing a run, which now queues its callbacks in the same transaction. Anchor: the same
 *    transaction with the finishing UPDATE alone (what it was before callbacks). Subjects: the
 *    repository's `finishExecution` with no subscription (the common case: one more indexed
 *    statement), and with one standing subscription (a delivery row and an outbox row more).
 * 2. One delivery attempt (`RunCallbackService.attempt`: the credential check, the sealed secret,
 *    the signed POST through the SSRF-guarded agent, the attempt's record) to a local receiver.
 *    Anchor: the least a sender can do: sign the same body and POST it on a fresh connection.
 *
 * One client, `--runs` operations per point, latencies in ms. Data goes into weft_bench.
 */
import { createHmac } from 'node:crypto';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import type { Principal } from '../src/platform/auth/principal';
import { SCOPES } from '../src/platform/auth/scopes';
import { finishExecution } from '../src/runs/execution-repository';
import { markdownTable, numberOption, timeEach } from './lib/measure';
import { bootBenchService } from './lib/servers';

export async function run(args: string[]): Promise<void> {
  const count = numberOption(args, 'runs', 300);
  const service = await bootBenchService({
    queue: 'weft-bench-callbacks',
    settings: { RUN_CALLBACK_ALLOW_PRIVATE: 'true' },
  });
  const { runtime, provisioning } = service;
  const receiver = http.createServer((req, res) => {
    req.resume();
    req.on('end', () => res.end('ok'));
  });
  receiver.listen(0, '127.0.0.1');
  await new Promise<void>((resolve) => receiver.once('listening', () => resolve()));
  const receiverUrl = `http://127.0.0.1:${(receiver.address() as AddressInfo).port}/callbacks`;

  /** A tenant with `count` unfinished runs (dispatched without starting their workflows). */
  async function tenantWithRuns(name: string) {
    const tenant = await provisioning.bootstrap({ name });
    const principal: Principal = {
      userId: tenant.user_id,
      workspaceId: tenant.workspace_id,
      tenantId: tenant.tenant_id,
      scopes: new Set(SCOPES),
      credential: { kind: 'user_jwt' },
    };
    const ids: string[] = [];
    for (let i = 0; i < count; i++) {
      const answer = await runtime.uow({ workspaceId: principal.workspaceId, userId: principal.userId }, (m) =>
        runtime.services.runs.dispatchWithin(m, principal, {
          agent: 'playbook',
          input: { steps: [{ tool: 'billing.credits_balance', input: {}, requires_approval: false }] },
        }),
      );
      ids.push(answer.execution_id);
    }
    return { principal, ids };
  }
  const outcome = { status: 'SUCCEEDED' as const, output: { ok: true }, error: null };

  console.error(`[bench] dispatching ${count * 3} runs`);
  const bare = await tenantWithRuns('weft-bench-callbacks-anchor');
  const none = await tenantWithRuns('weft-bench-callbacks-none');
  const one = await tenantWithRuns('weft-bench-callbacks-one');
  await runtime.services.runCallbacks.create(one.principal, {
    url: receiverUrl,
    events: ['run.finished'],
  });

  const finishAnchor = await timeEach('finish: the UPDATE alone (anchor)', bare.ids, (id) =>
    runtime.uow({ workspaceId: bare.principal.workspaceId }, (m) =>
      m.query(
        `UPDATE run_executions SET status = $2, output = $3, error = NULL, updated_at = now(), finished_at = now(),
           credits_charged = (SELECT coalesce(sum(credits_charged), 0) FROM run_steps WHERE execution_id = $1)
         WHERE id = $1 AND status NOT IN ('SUCCEEDED', 'FAILED', 'CANCELLED')`,
        [id, 'SUCCEEDED', JSON.stringify({ ok: true })],
      ),
    ),
  );
  const finishNone = await timeEach('finishExecution, no subscription', none.ids, (id) =>
    runtime.uow({ workspaceId: none.principal.workspaceId }, (m) => finishExecution(m, id, outcome)),
  );
  const finishOne = await timeEach('finishExecution, one subscription', one.ids, (id) =>
    runtime.uow({ workspaceId: one.principal.workspaceId }, (m) => finishExecution(m, id, outcome)),
  );

  const deliveries: { id: string }[] = await service.owner.query(
    `SELECT id FROM run_callback_deliveries WHERE workspace_id = $1 ORDER BY created_at`,
    [one.principal.workspaceId],
  );
  const body = JSON.stringify({ id: 'evt', type: 'run.finished', created_at: new Date().toISOString(), data: {} });
  const agent = new http.Agent({ keepAlive: false });
  const signedPost = () =>
    new Promise<void>((resolve, reject) => {
      const t = Math.floor(Date.now() / 1000);
      const v1 = createHmac('sha256', 'whsec_bench').update(`${t}.`).update(body).digest('hex');
      const request = http.request(receiverUrl, {
        method: 'POST',
        agent,
        headers: { 'content-type': 'application/json', 'x-service-signature': `t=${t},v1=${v1}` },
      });
      request.on('response', (response) => {
        response.resume();
        response.on('end', () => resolve());
      });
      request.on('error', reject);
      request.end(body);
    });
  const attemptAnchor = await timeEach('signed POST, fresh connection (anchor)', deliveries, () => signedPost());
  const attempt = await timeEach('delivery attempt (check, sign, POST, record)', deliveries, (delivery) =>
    runtime.services.runCallbacks.attempt(one.principal.workspaceId, delivery.id, 0),
  );

  console.log(`\nOne client, ${count} operations per point.\n`);
  console.log(
    markdownTable([
      { subject: finishNone, anchor: finishAnchor },
      { subject: finishOne, anchor: finishAnchor },
      { subject: attempt, anchor: attemptAnchor },
    ]),
  );
  console.log(
    `\nfinishing, no subscription: p50 +${(finishNone.p50 - finishAnchor.p50).toFixed(2)} ms over the anchor; ` +
      `one subscription: +${(finishOne.p50 - finishAnchor.p50).toFixed(2)} ms`,
  );

  await new Promise<void>((resolve) => receiver.close(() => resolve()));
  for (const tenant of [bare, none, one]) {
    await service.owner.query(`DELETE FROM run_callback_subscriptions WHERE workspace_id = $1`, [
      tenant.principal.workspaceId,
    ]);
  }
  await service.stop();
}
