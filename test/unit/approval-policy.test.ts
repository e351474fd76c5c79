import { expect } from 'chai';
import type { ApprovalPolicy } from '../../src/runs/approval-policy';
import { approvalRefusal } from '../../src/runs/approval-policy';

const KEY = '11111111-1111-4111-8111-111111111111';
const OTHER_KEY = '22222222-2222-4222-8222-222222222222';
const JTI = '33333333-3333-4333-8333-333333333333';
const ALICE = 'aaaaaaaa-aaaa-4aaa-8aaa-aaaaaaaaaaaa';
const BOB = 'bbbbbbbb-bbbb-4bbb-8bbb-bbbbbbbbbbbb';

const dispatcher = { userId: ALICE, credential: { kind: 'api_key' as const, id: KEY } };

/** The refusal's code (or null) for a resolver, a policy and a member count. */
async function refusalOf(
  resolver: { userId: string; credential: { kind: 'api_key' | 'user_jwt' | 'mcp_token'; id: string } },
  policy: ApprovalPolicy['dispatcher_may_approve'],
  members = 1,
): Promise<string | null> {
  let counted = false;
  const refusal = await approvalRefusal({
    dispatcher,
    resolver,
    policy: { dispatcher_may_approve: policy },
    members: async () => {
      counted = true;
      return members;
    },
  });
  if (counted) expect(policy, 'members counted only under when_alone').to.equal('when_alone');
  return refusal?.error ?? null;
}

describe('approvals: separation of duties, the rule', () => {
  it('never lets the dispatching credential resolve, whatever the policy', async () => {
    for (const policy of ['when_alone', 'always', 'never'] as const) {
      expect(await refusalOf({ userId: ALICE, credential: { kind: 'api_key', id: KEY } }, policy)).to.equal(
        'approval_by_dispatcher',
      );
    }
  });

  it('lets the dispatching user’s other credentials resolve as the policy says', async () => {
    const viaJwt = { userId: ALICE, credential: { kind: 'user_jwt' as const, id: JTI } };
    const viaKey = { userId: ALICE, credential: { kind: 'api_key' as const, id: OTHER_KEY } };
    expect(await refusalOf(viaJwt, 'when_alone', 1)).to.equal(null);
    expect(await refusalOf(viaKey, 'when_alone', 1)).to.equal(null);
    expect(await refusalOf(viaJwt, 'when_alone', 2)).to.equal('approval_by_dispatching_user');
    expect(await refusalOf(viaJwt, 'always', 5)).to.equal(null);
    expect(await refusalOf(viaJwt, 'never', 1)).to.equal('approval_by_dispatching_user');
  });

  it('lets another member resolve under every policy', async () => {
    const bob = { userId: BOB, credential: { kind: 'user_jwt' as const, id: JTI } };
    for (const policy of ['when_alone', 'always', 'never'] as const) {
      expect(await refusalOf(bob, policy, 2)).to.equal(null);
    }
  });
});
