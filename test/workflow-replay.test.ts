import { readdirSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { Resource } from '@opentelemetry/resources';
import { InMemorySpanExporter, SimpleSpanProcessor } from '@opentelemetry/sdk-trace-base';
import { makeWorkflowExporter } from '@temporalio/interceptors-opentelemetry';
import type { ReplayWorkerOptions } from '@temporalio/worker';
import { Worker } from '@temporalio/worker';
import { expect } from 'chai';
import { loadWorkflowBundle } from '../workers/bundle';
import { HISTORIES_DIR, historyDataConverter, historyFromFixture } from './helpers/histories';

/**
 * Recorded histories (`npm run histories:record`) replayed against today's workflow code: a change
 * that would make a running workflow non-deterministic (an activity reordered, a timer added, a
 * branch moved) fails here instead of in production. Such a change to a deployed workflow goes
 * behind `patched()`; an intended one is re-recorded.
 */
describe('workflow replay: recorded histories still replay deterministically', function () {
  this.timeout(120_000);

  const files = readdirSync(HISTORIES_DIR)
    .filter((file) => file.endsWith('.json'))
    .sort();

  it('has the recorded scenarios', () => {
    expect(files).to.include.members([
      'merge-review-approved.json',
      'prompt-both-local.json',
      'run-callback-retried.json',
      'run-flow-debounced.json',
      'run-llm-blocked-by-rules.json',
      'run-llm-local.json',
      'run-llm-openai.json',
      'run-llm-responded.json',
      'run-playbook-approved.json',
      'run-playbook-budget-approved.json',
      'run-playbook-budget-continued-before.json',
      'run-playbook-budget-continued-last.json',
      'run-playbook-budget-rejected.json',
      'run-playbook-child-cancelled.json',
      'run-playbook-continued-before.json',
      'run-playbook-continued-last.json',
      'run-playbook-deadline-escalated.json',
      'run-playbook-deadline-rejected.json',
      'run-playbook-fused-approved.json',
      'run-playbook-fused.json',
      'run-playbook-parent-cancelled.json',
      'run-playbook-quorum-approved.json',
      'run-playbook-rejected.json',
      'run-playbook-rules-edited.json',
      'run-playbook-runs-wait.json',
      'run-playbook-runs-wait-settled.json',
      'run-playbook-sleep.json',
      'run-playbook-wait-continued-before.json',
      'run-playbook-wait-continued-last.json',
      'run-playbook-waitpoint-timeout.json',
      'run-playbook-waitpoint.json',
      'run-schedule-fire-cancelled.json',
    ]);
  });

  async function replayAll(options: Omit<ReplayWorkerOptions, 'dataConverter'>) {
    const histories = files.map((file) => ({
      workflowId: path.basename(file, '.json'),
      history: historyFromFixture(readFileSync(path.join(HISTORIES_DIR, file), 'utf8')),
    }));
    const failures: string[] = [];
    const replayed: string[] = [];
    const results = Worker.runReplayHistories({ ...options, dataConverter: historyDataConverter() }, histories);
    for await (const result of results) {
      replayed.push(result.workflowId);
      if (result.error) failures.push(`${result.workflowId}: ${result.error.message}`);
    }
    expect(failures, failures.join('\n')).to.deep.equal([]);
    expect(replayed.sort()).to.deep.equal(histories.map((h) => h.workflowId).sort());
  }

  it('replays every fixture without a determinism error', async () => {
    await replayAll({ workflowBundle: await loadWorkflowBundle() });
  });

  it('replays every fixture with tracing on (the OpenTelemetry workflow interceptors in the bundle)', async () => {
    // Histories recorded with tracing off, replayed by a worker that has it on: turning tracing on
    // (docs/operations.md#tracing) must not make a running workflow non-deterministic.
    const tracingModule = require.resolve('@temporalio/interceptors-opentelemetry/lib/workflow-interceptors');
    const spans = new SimpleSpanProcessor(new InMemorySpanExporter());
    await replayAll({
      workflowBundle: await loadWorkflowBundle({ tracingModule }),
      sinks: { exporter: makeWorkflowExporter(spans, new Resource({ 'service.name': 'weft-replay' })) },
    });
  });
});
