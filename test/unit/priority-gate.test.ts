import { expect } from 'chai';
import type { EntityManager } from 'typeorm';
import { LIMITS } from '../../src/rules/limits';
import { holdAtGate } from '../../src/runs/priority-gate';

// Issue 43 item 2: which dispatches the priority gate lets start at once (the rest wait their turn).
describe('the priority gate at dispatch (issue 43 item 2)', () => {
  const cap = LIMITS.runs.priority.inFlight;

  it('starts a run at once while its workspace has room and nothing is held', () => {
    const m = {} as EntityManager;
    expect(holdAtGate(m, 'ws-1', { gate_in_flight: 0, gate_waiting: false })).to.equal(undefined);
    expect(holdAtGate(m, 'ws-1', { gate_in_flight: cap - 1, gate_waiting: false })).to.equal(undefined);
  });

  it('holds one at the cap, or behind held runs, and owes the workspace one release at commit', () => {
    const m = {} as EntityManager;
    const full = holdAtGate(m, 'ws-1', { gate_in_flight: cap, gate_waiting: false });
    const behind = holdAtGate(m, 'ws-1', { gate_in_flight: 0, gate_waiting: true });
    expect(full).to.deep.equal({ released: [] });
    expect(behind, 'one release per workspace and transaction').to.equal(full);
    expect(holdAtGate(m, 'ws-2', { gate_in_flight: cap, gate_waiting: true })).to.not.equal(full);
  });
});
