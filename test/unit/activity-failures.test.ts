import { ApplicationFailure } from '@temporalio/common';
import { expect } from 'chai';
import { classifiedActivities } from '../../activities/failures';
import { NotFoundError } from '../../src/platform/errors';

const failureOf = (promise: Promise<unknown>) =>
  promise.then(
    () => undefined,
    (error: unknown) => error,
  );

describe('classifiedActivities: every activity classifies its failures', () => {
  const activities = classifiedActivities(
    {
      refused: async (_input: { id: string }) => {
        throw new NotFoundError({ error: 'node_not_found' });
      },
      crashed: async () => {
        throw new Error('connection reset');
      },
      ownRule: async () => {
        throw new NotFoundError({ error: 'node_not_found' });
      },
      fine: async (input: { n: number }) => input.n + 1,
    },
    ['ownRule'],
  );

  it('a domain error is final: a non-retryable ApplicationFailure typed by its code', async () => {
    const failure = await failureOf(activities.refused({ id: 'x' }));
    expect(failure).to.be.instanceOf(ApplicationFailure);
    expect(failure).to.include({ type: 'not_found', nonRetryable: true });
  });

  it('anything else stays retryable, as it was thrown', async () => {
    const failure = await failureOf(activities.crashed());
    expect(failure).to.be.instanceOf(Error).and.not.instanceOf(ApplicationFailure);
  });

  it('an activity with its own rule runs as written, and answers pass through', async () => {
    expect(await failureOf(activities.ownRule())).to.be.instanceOf(NotFoundError);
    expect(await activities.fine({ n: 1 })).to.equal(2);
  });
});
