import { EventSchemas } from '@ag-ui/core/schemas';
import { expect } from 'chai';
import type { LoggedEvent, RunView } from '../../src/ag-ui/events';
import { agUiEvents } from '../../src/ag-ui/events';

const RUN = '00000000-0000-4000-8000-000000000001';
const STEP = '00000000-0000-4000-8000-000000000002';

const view = (): RunView => ({
  threadId: 'thread-1',
  runId: RUN,
  open: new Map(),
  inputs: new Map([[STEP, { q: 1 }]]),
});
let id = 0;
const row = (type: string, data: Record<string, unknown>): LoggedEvent => ({
  id: ++id,
  execution_id: RUN,
  type,
  data,
  created_at: '2026-11-29T09:00:00.000Z',
});

/** The AG-UI events of a run's log, each checked by `@ag-ui/core`'s own schemas. */
function events(rows: LoggedEvent[], seen = view()) {
  return rows.flatMap((logged) => agUiEvents(seen, logged)).map((event) => EventSchemas.parse(event) as any);
}
const types = (list: { type: string; name?: string }[]) =>
  list.map((event) => (event.type === 'CUSTOM' ? `CUSTOM:${event.name}` : event.type));

describe('AG-UI events from a run’s log (issue 42 item 3)', () => {
  beforeEach(() => {
    id = 0;
  });

  it('opens with RUN_STARTED, and a step is a tool call between STEP_STARTED and STEP_FINISHED', () => {
    const list = events([
      row('run.status', { status: 'QUEUED' }),
      row('step.started', { step_no: 0, step_id: STEP, tool: 'ontology.search' }),
      row('step.completed', { step_no: 0, step_id: STEP, tool: 'ontology.search', output: { hits: [] } }),
    ]);
    expect(types(list)).to.deep.equal([
      'RUN_STARTED',
      'CUSTOM:weft.run_status',
      'STEP_STARTED',
      'TOOL_CALL_START',
      'TOOL_CALL_ARGS',
      'TOOL_CALL_END',
      'TOOL_CALL_RESULT',
      'STEP_FINISHED',
    ]);
    expect(list[0]).to.include({ threadId: 'thread-1', runId: RUN, protocolVersion: '1.0' });
    expect(list[4].delta).to.equal('{"q":1}');
    expect(list[6].content).to.equal('{"hits":[]}');
    expect(list[2].stepName).to.equal(list[7].stepName);
  });

  it('a step that failed before it started (approval rejected) is a CUSTOM event, not a tool result', () => {
    const list = events([row('run.status', { status: 'QUEUED' }), row('step.failed', { step_id: STEP, error: {} })]);
    expect(types(list).slice(-1)).to.deep.equal(['CUSTOM:weft.step_failed']);
  });

  it('a cancelled run closes its open step before RUN_FINISHED, outcome cancelled', () => {
    const list = events([
      row('run.status', { status: 'QUEUED' }),
      row('step.started', { step_no: 0, step_id: STEP, tool: 'agent.start_session' }),
      row('run.finished', { status: 'CANCELLED', output: null, error: null, credits_charged: 0 }),
    ]);
    expect(types(list).slice(-2)).to.deep.equal(['STEP_FINISHED', 'RUN_FINISHED']);
    expect(list.at(-1).outcome).to.deep.equal({ type: 'cancelled' });
  });

  it('a failed run ends with RUN_ERROR and its code; a playbook’s output is the result, without a message', () => {
    const failed = events([
      row('run.status', { status: 'QUEUED' }),
      row('run.finished', { status: 'FAILED', output: null, error: { code: 'max_steps_exceeded', message: 'no' } }),
    ]);
    expect(failed.at(-1)).to.include({ type: 'RUN_ERROR', code: 'max_steps_exceeded', message: 'no' });
    id = 0;
    const playbook = events([
      row('run.status', { status: 'QUEUED' }),
      row('run.finished', { status: 'SUCCEEDED', output: { balance: 7 }, error: null, credits_charged: 0 }),
    ]);
    expect(types(playbook).slice(-1)).to.deep.equal(['RUN_FINISHED']);
    expect(playbook.at(-1).result).to.deep.equal({ balance: 7 });
  });
});
