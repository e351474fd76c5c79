import { expect } from 'chai';
import { exceededLimits, stepCredits } from '../../src/runs/budget';

// Issue 40 item 4: when a run's next step would exceed its budget (src/runs/budget.ts).
describe('run budgets: the limits a next step would exceed (unit)', () => {
  const spent = { credits: 3, steps: 2, duration_seconds: 59 };

  it('counts the step’s price against max_credits: spent + price over the limit exceeds it', () => {
    expect(exceededLimits({ max_credits: 4 }, spent, 1)).to.deep.equal([]);
    expect(exceededLimits({ max_credits: 4 }, spent, 2)).to.deep.equal(['max_credits']);
    // A free step never exceeds a spent-out credit budget.
    expect(exceededLimits({ max_credits: 3 }, spent, 0)).to.deep.equal([]);
  });

  it('counts the step itself against max_steps, and the wall time so far against max_duration_seconds', () => {
    expect(exceededLimits({ max_steps: 3 }, spent, 0)).to.deep.equal([]);
    expect(exceededLimits({ max_steps: 2 }, spent, 0)).to.deep.equal(['max_steps']);
    expect(exceededLimits({ max_duration_seconds: 60 }, spent, 0)).to.deep.equal([]);
    expect(exceededLimits({ max_duration_seconds: 59 }, spent, 0)).to.deep.equal(['max_duration_seconds']);
  });

  it('names every limit exceeded, and none without limits', () => {
    const all = { max_credits: 3, max_steps: 2, max_duration_seconds: 10 };
    expect(exceededLimits(all, spent, 1)).to.deep.equal(['max_credits', 'max_steps', 'max_duration_seconds']);
    expect(exceededLimits({}, spent, 100)).to.deep.equal([]);
  });

  it('prices a step by its tool as the capability registry charges it', () => {
    expect(stepCredits('ontology.search')).to.equal(1);
    expect(stepCredits('ontology.ask')).to.equal(3);
    expect(stepCredits('billing.credits_balance')).to.equal(0);
  });
});
