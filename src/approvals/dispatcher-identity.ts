import type { EntityManager } from 'typeorm';
import { standsFor } from '../api-keys/lineage';
import type { CredentialRef } from '../platform/auth/principal';
import type { ApprovalSubjectKind } from './entities';
import type { ApprovalPolicy } from './policy';
import { memberCount, readApprovalPolicy } from './policy';

export interface ApprovalRefusal {
  error: 'approval_by_dispatcher' | 'approval_by_dispatching_user';
  message: string;
}

/** Said in the answer when the person who dispatched resolved through another credential: what let them. */
export interface DispatcherResolved {
  policy: 'when_alone' | 'always';
  message: string;
}

export type Separation =
  | { refusal: ApprovalRefusal }
  | { refusal: null; dispatcherResolved: DispatcherResolved | null };

/** A credential as a run (or change-set) stores it, or as a request presents it; a stored id may be null. */
type Credential = { kind: CredentialRef['kind']; id?: string | null };

/**
 * Separation of duties on an approval (issue 23 item 2, by person since NM-5). The dispatching
 * credential never resolves, and neither does a credential that stands for it (minted from it, or
 * grown from the same key: `api-keys/lineage.ts`), whatever the policy: that is the agent whose step
 * waits, however many keys it mints. The person behind it (another session or key of that user)
 * resolves only as the workspace's policy says, and the answer says what allowed it; another member
 * always may. `members` and `standsForDispatcher` are asked only when they matter.
 */
export async function separationOfDuties(input: {
  dispatcher: { userId: string; credential: Credential };
  resolver: { userId: string; credential: Credential };
  policy: ApprovalPolicy;
  members: () => Promise<number>;
  /** Whether the resolver's credential stands for the dispatching one; asked of the dispatching user only. */
  standsForDispatcher: () => Promise<boolean>;
  /** A staged change-set's approval (issue 31 part 4): its stager stands where a run's dispatcher does. */
  subject?: ApprovalSubjectKind;
}): Promise<Separation> {
  const { dispatcher, resolver, policy } = input;
  const staged = input.subject === 'change_set';
  const did = staged ? 'staged this change-set' : 'dispatched this run';
  const theirs = staged ? 'change-sets you staged' : 'runs you dispatched';
  const decide =
    'another member, or a credential of yours it did not mint where the workspace’s approval policy allows it';
  const sameCredential =
    dispatcher.credential.id != null &&
    dispatcher.credential.kind === resolver.credential.kind &&
    dispatcher.credential.id === resolver.credential.id;
  if (sameCredential) {
    return {
      refusal: {
        error: 'approval_by_dispatcher',
        message: `The credential that ${did} cannot resolve its approvals: ${decide}, must decide`,
      },
    };
  }
  if (resolver.userId !== dispatcher.userId) return { refusal: null, dispatcherResolved: null };
  if (await input.standsForDispatcher()) {
    return {
      refusal: {
        error: 'approval_by_dispatcher',
        message:
          `This credential was minted from the credential that ${did} (or grew from the same key), so it ` +
          `counts as that credential and cannot resolve its approvals: ${decide}, must decide`,
      },
    };
  }
  const rule = `approval policy: dispatcher_may_approve = ${policy.dispatcher_may_approve}`;
  if (policy.dispatcher_may_approve === 'always') {
    return {
      refusal: null,
      dispatcherResolved: {
        policy: 'always',
        message: `You resolved approvals of ${theirs} through another credential, as this workspace allows (${rule})`,
      },
    };
  }
  if (policy.dispatcher_may_approve === 'never') {
    return {
      refusal: {
        error: 'approval_by_dispatching_user',
        message: `This workspace requires another member to resolve approvals of ${theirs} (${rule})`,
      },
    };
  }
  const members = await input.members();
  if (members <= 1) {
    return {
      refusal: null,
      dispatcherResolved: {
        policy: 'when_alone',
        message:
          `You resolved approvals of ${theirs} because you are this workspace's only member; once another ` +
          `member joins, they must (${rule})`,
      },
    };
  }
  return {
    refusal: {
      error: 'approval_by_dispatching_user',
      message: `This workspace has ${members} members, so another member must resolve approvals of ${theirs} (${rule})`,
    },
  };
}

/** The rule above for one approval, inside the resolving transaction (which acts as the resolver's user). */
export const separationWithin = (
  m: EntityManager,
  input: Pick<Parameters<typeof separationOfDuties>[0], 'dispatcher' | 'resolver' | 'subject'>,
): Promise<Separation> =>
  readApprovalPolicy(m).then((policy) =>
    separationOfDuties({
      ...input,
      policy,
      members: () => memberCount(m),
      standsForDispatcher: () => standsFor(m, input.dispatcher.credential, input.resolver.credential),
    }),
  );
