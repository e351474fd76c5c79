import { AsyncLocalStorage } from 'node:async_hooks';

/**
 * A read request answered with a principal remembered from an earlier request of the same credential
 * (see `Authenticator.recall`) must still prove, before it answers, that the credential is live now.
 * The proof is the credential's usual lookup; the request's first scoped read carries it in its own
 * statement (one round trip where there were two), and the router runs it alone when no read did.
 */
export interface CredentialProof {
  /** The credential's lookup: one statement answering one row at most, its parameters from `$1`. */
  sql: string;
  params: readonly unknown[];
  /** Set once the lookup has gone to the server, with a read or alone. */
  sent: boolean;
  /** Hands over the lookup's row (undefined when it found none). */
  settle(row: unknown): void;
  /** Resolves once the credential is found live; rejects with the 401 (or 404) it would have answered. */
  verdict: Promise<unknown>;
}

const proofs = new AsyncLocalStorage<CredentialProof>();

export const withCredentialProof = <T>(proof: CredentialProof, work: () => Promise<T>): Promise<T> =>
  proofs.run(proof, work);

/** The request's proof, when it has not gone to the server yet; the caller then must send it. */
export function takeCredentialProof(): CredentialProof | undefined {
  const proof = proofs.getStore();
  if (!proof || proof.sent) return undefined;
  proof.sent = true;
  return proof;
}
