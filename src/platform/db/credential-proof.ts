/**
 * A request answered with a principal remembered from an earlier request of the same credential
 * (see `Authenticator.recall`) must still prove, before it answers or writes, that the credential is
 * live now. The proof is the credential's usual lookup; the request's first scoped read or unit of
 * work carries it in its own message (one round trip where there were two), and the router runs it
 * alone when neither did.
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
  /**
   * What a unit of work awaits before it writes: the verdict, and that the credential is still the
   * very principal the request started from (else `PrincipalChanged`, and the request is served again).
   */
  confirmed(): Promise<void>;
}

/**
 * The credential was found live, but as another principal than the remembered one (its scopes or
 * workspace changed): nothing was written, and the request is served again as what it is now.
 */
export class PrincipalChanged extends Error {
  constructor() {
    super('the credential is now another principal');
  }
}

/**
 * The proof owed by a request, found from the request's own principal object (serveRecalled hands
 * the handler a copy of the remembered principal, made for this request alone). Passed by object,
 * not by AsyncLocalStorage: storage would switch on async hooks, which tax every promise of the
 * process (≈ 5 % of a read's CPU on Node 20, docs/benchmarks.md, speed round 3).
 */
const proofs = new WeakMap<object, CredentialProof>();

/** Marks `owner` (the request's principal) as owing `proof` to its first scoped read. */
export function owesCredentialProof(owner: object, proof: CredentialProof): void {
  proofs.set(owner, proof);
}

/** The proof `owner` owes, if any (carried on to the scope its reads run in). */
export const credentialProofOf = (owner: object): CredentialProof | undefined => proofs.get(owner);

/** The request's proof, when it has not gone to the server yet; the caller then must send it. */
export function takeCredentialProof(proof: CredentialProof | undefined): CredentialProof | undefined {
  if (!proof || proof.sent) return undefined;
  proof.sent = true;
  return proof;
}
