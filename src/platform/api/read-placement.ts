import type { Context } from 'koa';
import type { Principal } from '../auth/principal';
import { credentialProofOf, owesCredentialProof } from '../db/credential-proof';
import { Lsn, placeReads, READ_AFTER_HEADER, readPositionOf } from '../db/standby';
import { BadRequestError } from '../errors';

/**
 * With a standby (DATABASE_REPLICA_URL), each request gets its own principal carrying where its reads
 * may go (src/platform/db/standby.ts): the remembered principal is shared by the credential's
 * requests, so the place rides on a copy, with the credential lookup the request still owes.
 */
export function placeRequestReads(ctx: Context, principal: Principal, standby: boolean): Principal {
  const sent = ctx.get(READ_AFTER_HEADER);
  const after = sent ? Lsn.safeParse(sent) : undefined;
  if (after && !after.success) {
    throw new BadRequestError(`${READ_AFTER_HEADER} must be a WAL position as a write answered it, like 16/B374D848`);
  }
  const own: Principal = { ...principal };
  const proof = credentialProofOf(principal);
  if (proof) owesCredentialProof(own, proof);
  placeReads(own, { standby, after: after?.data });
  return own;
}

/** The request's last write's WAL position, for the client to send back on its next read. */
export function answerWritePosition(ctx: Context, principal: Principal): void {
  const wrote = readPositionOf(principal)?.wrote;
  if (wrote && !ctx.headerSent) ctx.set(READ_AFTER_HEADER, wrote);
}
