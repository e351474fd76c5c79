import { expect } from 'chai';
import { separationOfDuties } from '../../src/approvals/dispatcher-identity';
import type { ApprovalPolicy } from '../../src/approvals/policy';

const KEY = '11111111-1111-4111-8111-111111111111';
const OTHER_KEY = '22222222-2222-4222-8222-222222222222';
const JTI = '33333333-3333-4333-8333-333333333333';
const ALICE = 'aaaaaaaa-aaaa-4aaa-8aaa-aaaaaaaaaaaa';
const BOB = 'bbbbbbbb-bbbb-4bbb-8bbb-bbbbbbbbbbbb';

const dispatcher = { userId: ALICE, credential: { kind: 'api_key' as const, id: KEY } };
type Resolver = { userId: string; credential: { kind: 'api_key' | 'user_jwt' | 'mcp_token'; id: string } };

/** The verdict for a resolver, a policy, a member count and whether its credential stands for the dispatcher's. */
async function verdictOf(
  resolver: Resolver,
  policy: ApprovalPolicy['dispatcher_may_approve'],
  members = 1,
  standsFor = false,
) {
  let counted = false;
  let traced = false;
  const verdict = await separationOfDuties({
    dispatcher,
    resolver,
    policy: { dispatcher_may_approve: policy },
    members: async () => {
      counted = true;
      return members;
    },
    standsForDispatcher: async () => {
      traced = true;
      return standsFor;
    },
  });
  if (counted) expect(policy, 'members counted only under when_alone').to.equal('when_alone');
  if (traced) expect(resolver.userId, 'the line traced only for the dispatching user').to.equal(ALICE);
  return verdict;
}

const refusalOf = async (...args: Parameters<typeof verdictOf>) => (await verdictOf(...args)).refusal?.error ?? null;

describe('approvals: separation of duties, the rule', () => {
  it('never lets the dispatching credential resolve, whatever the policy', async () => {
    for (const policy of ['when_alone', 'always', 'never'] as const) {
      expect(await refusalOf({ userId: ALICE, credential: { kind: 'api_key', id: KEY } }, policy)).to.equal(
        'approval_by_dispatcher',
      );
    }
  });

  it('NM-5: nor a credential minted from it (or grown from the same key), whatever the policy', async () => {
    const sibling = { userId: ALICE, credential: { kind: 'api_key' as const, id: OTHER_KEY } };
    for (const policy of ['when_alone', 'always', 'never'] as const) {
      const verdict = await verdictOf(sibling, policy, 1, true);
      expect(verdict.refusal?.error).to.equal('approval_by_dispatcher');
      expect(verdict.refusal?.message).to.match(/minted from the credential that dispatched this run/);
    }
  });

  it('lets the dispatching user’s other credentials resolve as the policy says, and says why', async () => {
    const viaJwt = { userId: ALICE, credential: { kind: 'user_jwt' as const, id: JTI } };
    const viaKey = { userId: ALICE, credential: { kind: 'api_key' as const, id: OTHER_KEY } };
    const alone = await verdictOf(viaJwt, 'when_alone', 1);
    expect(alone.refusal).to.equal(null);
    expect(alone).to.have.nested.property('dispatcherResolved.policy', 'when_alone');
    expect(alone)
      .to.have.nested.property('dispatcherResolved.message')
      .that.matches(/only member/);
    expect(await refusalOf(viaKey, 'when_alone', 1)).to.equal(null);
    expect(await refusalOf(viaJwt, 'when_alone', 2)).to.equal('approval_by_dispatching_user');
    const always = await verdictOf(viaJwt, 'always', 5);
    expect(always).to.have.nested.property('dispatcherResolved.policy', 'always');
    expect(await refusalOf(viaJwt, 'never', 1)).to.equal('approval_by_dispatching_user');
  });

  it('lets another member resolve under every policy, with nothing to explain', async () => {
    const bob = { userId: BOB, credential: { kind: 'user_jwt' as const, id: JTI } };
    for (const policy of ['when_alone', 'always', 'never'] as const) {
      expect(await verdictOf(bob, policy, 2)).to.deep.equal({ refusal: null, dispatcherResolved: null });
    }
  });
});
