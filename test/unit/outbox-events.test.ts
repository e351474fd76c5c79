import { expect } from 'chai';
import { z } from 'zod';
import { OUTBOX_EVENTS, OUTBOX_HANDLERS } from '../../src/app/outbox-handlers';
import { defineEvent } from '../../src/platform/outbox/event';
import { createOutboxRelay, onEvent } from '../../src/platform/outbox/relay';
import { runDispatched, runStartInput } from '../../src/runs/events';

// The relay is built without a database or Temporal: construction only reads the lists.
const relayDeps = { uow: (() => Promise.reject(new Error('no database'))) as never, logger: {} as never };

describe('outbox event contracts (unit)', () => {
  it('one contract per event name, each with a version', () => {
    const names = OUTBOX_EVENTS.map((contract) => contract.name);
    expect(new Set(names).size).to.equal(names.length);
    for (const contract of OUTBOX_EVENTS) expect(contract.version, contract.name).to.be.at.least(1);
  });

  it('every handler handles a listed contract', () => {
    for (const handler of OUTBOX_HANDLERS({} as never, {} as never)) expect(OUTBOX_EVENTS).to.include(handler.contract);
  });

  it('the relay refuses two contracts of one name', () => {
    const twin = defineEvent('run.dispatched', 2, z.object({}));
    expect(() =>
      createOutboxRelay({ ...relayDeps, events: OUTBOX_EVENTS, handlers: [onEvent(twin, async () => {})] }),
    ).to.throw('Two outbox event contracts are named run.dispatched');
  });

  it("a run's start input is its dispatch payload, field for field", () => {
    const payload = runDispatched.payload.parse({
      execution_id: 'e1',
      agent: 'llm',
      step_count: 0,
      goal: 'g',
      approval_recheck_seconds: 60,
      approval_rechecks_per_run: 200,
    });
    expect(runStartInput('w1', payload)).to.deep.equal({
      workspaceId: 'w1',
      executionId: 'e1',
      agent: 'llm',
      stepCount: 0,
      approvalRecheckSeconds: 60,
      approvalRechecksPerRun: 200,
      goal: 'g',
    });
  });
});
