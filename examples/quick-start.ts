/**
 * The README's quick start with the typed client: `KEY=weft_sk_… JWT=eyJ… npx tsx examples/quick-start.ts`
 * against `npm start` (WEFT_URL defaults to http://127.0.0.1:8080). The run is dispatched with the key
 * and approved with the user JWT: the dispatching credential never approves its own run.
 */
import { createWeftClient } from '../src/client';

async function main() {
  const baseUrl = process.env.WEFT_URL ?? 'http://127.0.0.1:8080';
  const weft = createWeftClient({ baseUrl, token: process.env.KEY });
  const reviewer = createWeftClient({ baseUrl, token: process.env.JWT });

  const ada = await weft.POST('/v1/ontology/nodes', {
    body: { type: 'person', name: 'Ada Lovelace', properties: { email: 'ada@example.org' } },
  });
  const engines = await weft.POST('/v1/ontology/nodes', { body: { type: 'organization', name: 'Analytical Engines' } });
  if (!ada.data || !engines.data) throw new Error(JSON.stringify(ada.error ?? engines.error));

  await weft.POST('/v1/ontology/edges', {
    body: { type: 'WORKS_AT', source_node_id: ada.data.id, target_node_id: engines.data.id },
  });

  const search = await weft.POST('/v1/ontology/search', { body: { q: 'Ada', top_k: 5 } });
  console.log(search.data?.results.map((result) => [result.node.name, result.score]));

  const prompt = await weft.POST('/v1/ontology/prompt', { body: { prompt: 'Where does Ada Lovelace work?' } });
  console.log(prompt.data?.answer, prompt.data?.citations, prompt.data?.credit_receipt);

  // A durable agent run whose second step waits for a person's approval.
  const run = await weft.POST('/v1/runs', {
    body: {
      agent: 'playbook',
      input: {
        steps: [
          { tool: 'billing.credits_balance', input: {} },
          { tool: 'ontology.search', input: { query: 'Ada' }, requires_approval: true },
        ],
      },
    },
  });
  // 202 with the run (200 with an estimate answers only `?dry_run=true`).
  if (!run.data || !('execution_id' in run.data)) throw new Error(JSON.stringify(run.error));
  const executionId = run.data.execution_id;
  const pending = await waitFor(async () => {
    const approvals = await weft.GET('/v1/approvals', { params: { query: { status: 'pending' } } });
    return approvals.data?.approvals.find((approval) => approval.execution_id === executionId);
  });
  await reviewer.POST('/v1/approvals/{approval_id}/resolve', {
    params: { path: { approval_id: pending.approval_id } },
    body: { decision: 'APPROVED', notes: 'Looks right.' },
  });
  const done = await waitFor(async () => {
    const current = await weft.GET('/v1/runs/{execution_id}', { params: { path: { execution_id: executionId } } });
    return current.data?.status === 'SUCCEEDED' ? current.data : undefined;
  });
  console.log(
    done.status,
    done.steps.map((step) => step.tool),
  );
}

/** Polls until `probe` returns something (runs and approvals settle asynchronously). */
async function waitFor<T>(probe: () => Promise<T | undefined>, timeoutMs = 30_000): Promise<T> {
  for (const deadline = Date.now() + timeoutMs; Date.now() < deadline; ) {
    const value = await probe();
    if (value !== undefined) return value;
    await new Promise((resolve) => setTimeout(resolve, 200));
  }
  throw new Error('timed out');
}

main().catch((error) => {
  console.error(error);
  process.exit(1);
});
